#!/usr/bin/env bash
# Session 16, device run 5 (carried build): the x-resident plan now breaks warps-per-SM ties by the
# critical path (unit rounds x groups per warp, then rounds) and takes x resident with token chunks
# at fewer warps per SM. tests/test_cuda_gemm.py whole, the rule's times on the Qwen3 layers (fp16 /
# wgmma / tile beside), then the dispatch sweep; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r5; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
timeout 90 python3 scripts/probe_gemv_launch.py --shapes Q,gateup,O,down,KV,llama8b_gu --ms 8,16,24,32,48,64 \
  --settings 1:1:1:0:8:0 --reps 1 --baselines fp16,wgmma,tile --out $R/probe > $R/probe.log 2>&1; grep "^|" $R/probe.log
TUNE_TIMEOUT=200 timeout 210 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -1 $R/tune.log | cut -c1-100
tar -czf $OUT/run5.tar.gz -C $R .; cp $R/tests-cuda-gemm.log $R/probe.log $OUT/; cp $R/tune/tc_dispatch_table.h $OUT/ 2>/dev/null
# the unit slots under racecheck and synccheck (scripts/sanitize_cases.py gemv-slots)
for tool in racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-slots \
    > $R/sanitize-$tool.log 2>&1; echo "$tool rc=$?: $(grep -E 'SUMMARY|sanitize_cases' $R/sanitize-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run5.tar.gz -C $R .
