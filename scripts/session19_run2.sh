#!/usr/bin/env bash
# Session 19, device run 2 (carried build: the wgmma kernel with the row scales, the codebook and
# the first group's x requested before the weight copies, row scales applied to the split partials,
# a relaxed final cluster barrier; ab_base/ = main 2a1503b): the op against the base (twice), the
# wgmma tests, compute-sanitizer on the cluster cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r2; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,O,KV,llama8b_gu,llama70b_gu --ms 16,32,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && timeout 100 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | tr '\n' ';'; echo
  timeout 100 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize-wgmma-$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run2.tar.gz -C $R .
