#!/usr/bin/env bash
# Session 15, device run 3 (carried build, the dispatch table of run 2): the MoE sweep of record
# (the grouped kernels' code moved: x slots passed to the decode), then the whole GPU suite, with
# each file's durations; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s15; R=$LOGS/r3; mkdir -p $R; start_device_run || exit 1
timeout 45 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $R/run-moe.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
cp /tmp/rm/*/results-full.md $R/results-moe.md; cp /tmp/rm/*/results-full.json $R/results-moe.json
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 360 python3 -m pytest tests -q --maxfail=20 -rs --durations=12 --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1
tail -25 $R/tests-rest.log
tar -czf $OUT/run3.tar.gz -C $R .; cp $R/tests-*.log $OUT/
