#!/usr/bin/env bash
# Session 13, device run 2: the GEMV's token-slot probe (M = 1-4 through the 8-slot kernel), the
# dispatch table re-measured with the GEMV up to M = 16 (tune_dispatch), the build with it, and the
# dispatch / GEMV / grouped tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
# Run 2 ran this probe's first version (probe_gemv_slots.py --slots 1,8, writing slots.json; it was renamed
# before its first commit). It predates the spread, so settings 1:0,8:0 time the same launches.
timeout 100 python3 scripts/probe_gemv_launch.py --shapes KV,Q,O,gateup,down,llama8b_gu --ms 1,4 --settings 1:0,8:0 \
  --out $LOGS/slots 2>&1 | tee $LOGS/slots.log
TUNE_TIMEOUT=280 tune_and_rebuild $LOGS/tune && cp $LOGS/tune/tc_dispatch_table.h $OUT/
timeout 120 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py -q --maxfail=10 \
  -k "dispatch or table or gemv or grouped_gemm_takes or compile" 2>&1 | tee $LOGS/tests.log | tail -2
cp $LOGS/slots.log $LOGS/slots/gemv-launch.json $LOGS/tune.log $LOGS/tests.log $OUT/ 2>/dev/null
