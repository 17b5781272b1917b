#!/usr/bin/env bash
# Session 16, device run 9 (carried build: grouped_gemm takes the GEMV up to 8 tokens per expert on
# average): the MoE rows and sweep of record
# (benchmarks.run: Qwen3 MoE experts, 8-512 experts x 1-64 tokens, cuBLAS fp16 bmm beside), then the
# whole GPU suite; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r9; mkdir -p $R; start_device_run || exit 1
timeout 90 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $R/run-moe.log 2>&1
grep -E "^\| moe_(gu|dn) \((64|256|512) x .*\| (1|8|16) \|" /tmp/rm/*/results-full.md | head -24
cp /tmp/rm/*/results-full.md $R/results-moe.md; cp /tmp/rm/*/results-full.json $R/results-moe.json
timeout 170 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 320 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1
tail -2 $R/tests-rest.log; cp $R/tests-*.log $OUT/
tar -czf $OUT/run9.tar.gz -C $R .; cp $R/results-moe.md $OUT/
