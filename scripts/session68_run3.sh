#!/usr/bin/env bash
# Session 68, run 3: the table merged with run 2's sweeps and the mended plan test on the GPU: test_cuda_gemm.py's
# dispatch / table / plan / cluster tests, the MoE, fused, gated, opcheck and kernel-resource files; racecheck on
# the decode-path forms (x resident at 2 and 8 warps a unit, k = 4, 2, 5: the split table's build and lookups in unit
# slots) and memcheck on the cluster split (k = 5 at 4 rows among its cases).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py tests/test_moe_ops.py \
  tests/test_nn_fused.py tests/test_nn_gated_mlp.py tests/test_opcheck.py tests/test_kernel_resources.py \
  -k "dispatch or table or plan or cluster or moe or fused or gated or silu or opcheck or resource" \
  > $OUT/run3-tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/run3-tests.log | tail -12 | cut -c1-300
SAN_TAIL=2 sanitize_run racecheck 150 gemv-decode-path
SAN_TAIL=2 sanitize_run memcheck 80 gemv-split
