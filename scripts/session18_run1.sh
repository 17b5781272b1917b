#!/usr/bin/env bash
# Session 18, device run 1 (carried build of main 9d271ef: the kernels of session 17 + the memo mends):
# where the dense paths' time goes on small weights (kernel by kernel, scripts/probe_kernel_split.py),
# the ops' graph timings on the Qwen3 shapes from M = 48 and 8B (baseline of this session), and the
# GEMV plan-memo test added after session 17's last run; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r1; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 scripts/probe_kernel_split.py --ops wgmma_gemm,tile_gemm --shapes gateup,down,KV,llama8b_gu \
  --ms 16,64,128 --out $R/kernel-split.json > $R/kernel-split.log 2>&1; cat $R/kernel-split.log | cut -c1-400
timeout 150 python3 -m benchmarks.ab_paths --ops wgmma_gemm,tile_gemm --shapes gateup,down,Q,O,KV,llama8b_gu \
  --ms 16,48,64,96,128 --ks 4 --out $R/ab-base > $R/ab-base.log 2>&1; grep -E "k=4" $R/ab-base.log
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -k "remembered_plan" > $R/tests-memo.log 2>&1; tail -2 $R/tests-memo.log
tar -czf $OUT/run1.tar.gz -C $R .
