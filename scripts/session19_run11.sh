#!/usr/bin/env bash
# Session 19, device runs 11-12 (carried build: the wgmma kernel prefetches the codebook's and row
# scales' lines and its first group's tiles into L2 before the PDL wait (run 12: only where x is
# staged); ab_base/ = main 47ff9e0):
# the op against the base (twice), the wgmma and dependent-launch tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r${RUN:-11}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,O,KV,llama8b_gu,llama70b_gu --ms 16,32,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=47ff9e0 timeout 100 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
  timeout 100 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
done
timeout 150 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q --maxfail=20 -k "wgmma or dependent" > $R/tests-wgmma-pdl.log 2>&1; tail -1 $R/tests-wgmma-pdl.log
tar -czf $OUT/run${RUN:-11}.tar.gz -C $R .
