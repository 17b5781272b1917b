#!/usr/bin/env bash
# Session 34, device run 10 (carried build: 28f7be9's csrc, the final one, run 9's build): the wgmma and image-pass tests
# of test_cuda_gemm and test_dependent_launch on it (run 7 ran those files on ff27c70, whose image kernel had the
# launch bound since taken out).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q -k "wgmma or image or dependent" \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
