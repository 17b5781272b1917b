#!/usr/bin/env bash
# Session 18, device run 4 (carried build: run 3's kernel with all of a producer thread's x items
# of the next group loaded into registers before its stage is free; ab_base/ = main 9d271ef): the
# op against the base in one run (twice, alternating), then the wgmma tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r4; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,Q,O,KV,llama8b_gu,llama70b_gu --ms 16,32,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && timeout 120 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | tr '\n' ';'; echo
  timeout 120 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
tar -czf $OUT/run4.tar.gz -C $R .
