#!/usr/bin/env bash
# Session 52, device run 11: the tiled dequantize's part index named once (sessions 49-51's left-over; ptxas schedules
# the 12 dequantize_tiled_kernel instances differently, every other kernel's SASS is run 10's): test_cuda_format.py,
# compute-sanitizer memcheck and racecheck on the tiled dequantize's cases, and the dequantize's time under the rule
# against whole tiles (session 49's run 14 probe, for comparison with its numbers).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_cuda_format.py > $OUT/tests-format.log 2>&1
echo "tests-format rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-format.log | head -8 | cut -c1-300
sanitize_run memcheck 90 dequant-tiled
sanitize_run racecheck 90 dequant-tiled
timeout 80 python3 scripts/probe_dequant_parts.py --shapes KV,Q,gateup --parts 0,1 --rounds 2 > $OUT/parts.log 2>&1
echo "parts rc=$?"; grep -v "Warn\|_cuda_set_sync" $OUT/parts.log | cut -c1-300
