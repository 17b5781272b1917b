#!/usr/bin/env bash
# Session 25, device run 10 (carried build of 8862427; ab_base/ = main 78870d6's build): run 3 read Qwen3 gate/up
# 0.2-0.3 us slower at M = 16-64 with the lookup change although those calls run kernels whose loop SASS did not
# change, with the base first in each round. The wgmma op, new first then base, three rounds. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,O,gateup,down --ms 16,32,48,64 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //; s/ us//' | tr '\n' ';'; echo; }
for rep in 1 2 3; do
  timeout 60 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log)"
  (cd ab_base && KBIT_BENCH_COMMIT=78870d6 timeout 60 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log)"
done
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
