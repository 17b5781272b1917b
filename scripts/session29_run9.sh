#!/usr/bin/env bash
# Session 29, device run 9 (carried build, main's): the GPU test files not run since the GEMV changes (the shared decode
# runs in kbit.Experts and the numerics / API / fuzz paths; k = 5 past 2^31 elements).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 190 python3 -m pytest tests/test_numerics.py tests/test_api.py tests/test_fuzz.py tests/test_moe_ops.py \
  tests/test_large_tensors.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
