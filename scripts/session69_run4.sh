#!/usr/bin/env bash
# Session 69, run 4: the final build (the table merged with run 2's sweeps under the GEMV range's least-worst-loss rule)
# on the GPU: test_cuda_gemm.py's dispatch / table / plan tests (the table changed k = 5's crossovers), then the test
# files run 3 did not reach in its time (test_moe_slots, test_nn, test_nn_fused, test_nn_gated_mlp,
# test_router_topk); the logs land in $OUT/run4.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=$(pwd)/r4; mkdir -p $R
timeout 110 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py -k "dispatch or table or plan" \
  > $R/tests-dispatch.log 2>&1
echo "dispatch tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests-dispatch.log | tail -6 | cut -c1-300
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_moe_slots.py tests/test_nn.py tests/test_nn_fused.py \
  tests/test_nn_gated_mlp.py tests/test_router_topk.py > $R/tests-rest.log 2>&1
echo "rest rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests-rest.log | tail -6 | cut -c1-300
tar -C $R -cJf $OUT/run4.tar.xz .
