#!/usr/bin/env bash
# Session 58, device run 11 (the review's mends: the gated launch refused where its kernel lacks the epilogue, host
# code only; GateUpBuffers' save / load paths; the tests' plan asserts and the PDL chain's fused op): the MoE, glue,
# Experts and HF integration tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_moe_ops.py tests/test_dependent_launch.py tests/test_nn.py \
  tests/test_integration_transformers.py tests/test_opcheck.py -k "moe or glue or combine or route or gather or silu or \
xperts or Qwen or qwen" > $OUT/tests-moe.log 2>&1
echo "tests moe rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe.log | tail -8 | cut -c1-300
