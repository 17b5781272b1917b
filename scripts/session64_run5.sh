#!/usr/bin/env bash
# Session 64, run 5: the final tree's tests on the GPU for what changed after run 3: test_integration_transformers (new:
# fuse_projections on HF Qwen3-MoE and Llama; the compiled + captured decode step fused), and again test_nn_fused,
# test_router_topk, test_nn, test_opcheck and the HF benchmark's tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 400 python3 -m pytest -q -rs -p no:cacheprovider tests/test_integration_transformers.py tests/test_nn_fused.py \
  tests/test_router_topk.py tests/test_nn.py tests/test_opcheck.py benchmarks/tests/test_hf_model.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
