#!/usr/bin/env bash
# Session 58, device run 12: run 11's gated test found no launch of its cases with one warp a unit (the direct store
# never ran); two cases on K = 256 (one 256-column group: one warp a unit) added. test_moe_ops.py whole, with the plans.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m pytest -q tests/test_moe_ops.py > $OUT/tests-moe-ops.log 2>&1
echo "test_moe_ops rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe-ops.log | tail -6 | cut -c1-300
