#!/usr/bin/env bash
# Session 32, device run 9 (carried build: after the review's mends: the y tile's element-a-thread fallback, bool guards on
# the new aids, comments): the wgmma tests (with the new 16-byte y-tile test and the refactored x-peers / first-stage
# tests), the kernel-resource tests, and the traced probe's per-CTA group masks on one cell.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -k "wgmma or resources or stack or sass" -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E  |passed|failed" $R/tests.log | head -12 | cut -c1-300
timeout 60 python3 scripts/probe_wgmma_configs.py --shapes Q,llama8b_gu --ms 16,64,128 --row-tiles 0 --splits 0 --staging 0 \
  --out $R/rule.json > $R/rule.log 2>&1; echo "probe rc=$?"; grep -E "rule|fp16" $R/rule.log | cut -c1-60
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
