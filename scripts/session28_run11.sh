#!/usr/bin/env bash
# Session 28, device run 11 (carried build, run 10's): the GEMV's shared decode (x by the lanes that use it, the
# ring's stage offsets) also runs in grouped (MoE) launches and under kbit.Experts, the fuzz and numerics tests:
# those test files, as far as the session's device time allows (a 150 s cap).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-11}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_moe_ops.py tests/test_numerics.py tests/test_api.py tests/test_fuzz.py -q \
  > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -6 | cut -c1-300; tail -c 600 $R/tests.log
tar -czf $OUT/run${RUN:-11}.tar.gz -C $R .
