#!/usr/bin/env bash
# Session 25, device run 3 (carried build: a pair-table lookup's address one IMAD from the code byte,
# lane_pair_table / pair_table_word; ab_base/ = main 78870d6's build): the wgmma op, base vs new, on Qwen3
# Q, O, gate/up, down and 8B gate/up at M = 16-1024, 70B gate/up at 16 / 32 / 128 (two alternating rounds); then the wgmma,
# tile and dispatch tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,O,gateup,down,llama8b_gu --ms 16,32,64,128,512,1024 --ks 4"
AB70="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes llama70b_gu --ms 16,32,128 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo; }
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=78870d6 timeout 80 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  (cd ab_base && KBIT_BENCH_COMMIT=78870d6 timeout 60 $AB70 --out $R/ab70-base-$rep > $R/ab70-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log) $(row $R/ab70-base-$rep.log)"
  timeout 80 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  timeout 60 $AB70 --out $R/ab70-new-$rep > $R/ab70-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log) $(row $R/ab70-new-$rep.log)"
done
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "wgmma or tile or dispatch" > $R/tests-wgmma-tile.log 2>&1
tail -1 $R/tests-wgmma-tile.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma-tile.log | head -8
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
