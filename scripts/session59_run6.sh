#!/usr/bin/env bash
# Session 59, device run 6 (the final build: with_row_copy_unit, host code): the HF integration tests with the new
# compiled + captured decode step, the nn / Experts / glue / PDL / block tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q tests/test_integration_transformers.py tests/test_nn.py \
  tests/test_dependent_launch.py \
  tests/test_block.py benchmarks/tests/test_hf_model.py > $OUT/tests-integration.log 2>&1
echo "tests rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-integration.log | tail -8 | cut -c1-300
