#!/usr/bin/env bash
# Session 65, run 1: kbit::gemm_silu_and_mul (the dense GEMV's gated epilogue) and kbit.nn.GatedMLP. Tests (the new
# op and module, opcheck, the grouped gated paths whose launch check changed, fused projections, the HF integration
# and the HF benchmark's CPU-sized tests), the gated cases under memcheck / racecheck, and the op against gemm +
# silu_and_mul at M = 1, 2 (cold L2, CUDA graphs).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_nn_gated_mlp.py tests/test_opcheck.py \
  tests/test_moe_ops.py tests/test_moe_slots.py tests/test_nn_fused.py tests/test_integration_transformers.py \
  benchmarks/tests/test_hf_model.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 90 gated-gemv
SAN_TAIL=2 sanitize_run racecheck 120 gated-gemv
timeout 150 python3 scripts/probe_gated_gemv.py --json $OUT/probe-gated.json > $OUT/probe-gated.log 2>&1
echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-gated.log
