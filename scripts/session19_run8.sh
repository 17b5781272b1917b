#!/usr/bin/env bash
# Session 19, device run 8 (carried build of a516251: the split reduction over the valid tokens only;
# ab_base/ = main 61e1098): the op against the base (twice) where chunks are partial (M = 40-56, 96),
# the wgmma tests, memcheck on the cluster cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=a516251
LOGS=/tmp/s19; R=$LOGS/r8; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,Q,O,KV --ms 40,48,56,64,96 --ks 4"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=61e1098 timeout 100 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
  timeout 100 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
done
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -1 $R/tests-wgmma.log
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize-wgmma-memcheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run8.tar.gz -C $R .
