#!/usr/bin/env bash
# Session 34, device run 12 (carried build: the final csrc, the valid image-thread counts in one place): the plan, image-threads and
# graph tests (the second review's mends: the rule's 512 only with PDL on for the process) with PDL on and with
# KBIT_PDL=0, then the wgmma, image and dependent-launch tests (run 10's command).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-12}; mkdir -p $R; start_device_run || exit 1
sel="launch_plan or image_threads or wgmma_gemm_graph or reject_bad_values"
KBIT_PDL=0 timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -k "$sel" > $R/tests-pdl0.log 2>&1
echo "KBIT_PDL=0 rc=$?"; tail -1 $R/tests-pdl0.log | cut -c1-300
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q -k "wgmma or image or dependent" \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-12}.tar.gz -C $R .
