#!/usr/bin/env bash
# Session 30, device run 7 (two H200s; carried build: main's, as runs 4-5): tests/test_multi_gpu.py (it needs two GPUs:
# its last run in docs/design.md: session 5).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s30; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
nvidia-smi -L | tee $R/gpus.txt
timeout 200 python3 -m pytest tests/test_multi_gpu.py -v > $R/tests-multi-gpu.log 2>&1
echo "tests rc=$?"; grep -E "PASSED|FAILED|SKIPPED|passed|failed" $R/tests-multi-gpu.log | tail -12 | cut -c1-200
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
