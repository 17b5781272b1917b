#!/usr/bin/env bash
# Session 58, device run 4: kbit::grouped_gemm_silu_and_mul (the grouped GEMV's gated epilogue: gate/up rows
# interleaved in 8s, y = silu(gate) * up) and moe_route_gather back to a CTA a row. The MoE op tests and opcheck,
# test_kernel_resources; the decode step's links with the gated call (scripts/probe_experts_links.py); memcheck on
# the glue cases; the MoE grouped GEMM cells against run 1's (no kernel change but the epilogue's branch).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 -m pytest -q tests/test_moe_ops.py tests/test_opcheck.py tests/test_dependent_launch.py tests/test_nn.py tests/test_integration_transformers.py \
  -k "moe or glue or combine or route or gather or silu or xperts" > $OUT/tests-moe.log 2>&1
echo "tests moe rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe.log | tail -8 | cut -c1-300
timeout 200 python3 scripts/probe_experts_links.py --experts 128,512 --tokens 1,4,16 --rounds 3 --out $OUT \
  > $OUT/links.log 2>&1; echo "links rc=$?"; grep -v Warn $OUT/links.log | cut -c1-300
sanitize_run memcheck 100 moe-glue
