#!/usr/bin/env bash
# Session 66, run 4: session 66's dense decode rule at 1-4 rows, k = 4 (x resident and its warps per unit by the
# critical path) against session 37's (kbit._C._set_gemv_decode_path_rule(0)) on the benchmark shapes and dense
# models' shapes of K = 2048-8192 at M = 1, 2, 4; the plan and decode GEMV tests; the gated tests (their plans).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py tests/test_nn_gated_mlp.py \
  -k "plan or gemv_decode or x_resident or gated or silu" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-400
timeout 330 python3 scripts/probe_gemv_launch.py \
  --shapes Q,KV,O,gateup,down,llama8b_gu,llama70b_gu,glm_shared_gu,6144x4096,28672x4096,4096x14336,57344x4096,128256x4096,4608x3584,37888x3584,3584x18944,152064x3584,10240x5120,34816x5120,51200x5120,5120x17408,151936x5120,57344x8192,8192x28672,65536x2048,151936x2048 \
  --ms 1,2,4 --settings "1,1:1:1:0:8:0:-1:1:-1:0:0" --reps 5 --out $OUT/ab > $OUT/ab.log 2>&1
echo "ab rc=$?"; grep -E "^\|" $OUT/ab.log | cut -c1-200
