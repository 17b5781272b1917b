#!/usr/bin/env bash
# Session 67, run 1: session 66's host-only mends and this session's rule changes on the GPU (the decode rule's
# critical path in one helper; k = 5 at 2-4 rows takes every candidate; no candidate of one group a warp; at 2-4 rows
# the base where the candidate fits fewer warps per SM than x staged): the plan, decode and gated tests; the rule
# against forced forms at k = 5 (2 / 4 rows) and on K = 2048 at k = 4 (the 8-warp exclusion); racecheck and memcheck
# on the gemv-decode-path sanitizer group.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py tests/test_nn_gated_mlp.py \
  tests/test_nn_fused.py tests/test_opcheck.py \
  -k "plan or gemv_decode or x_resident or by_path or gated or silu or gemv_launch or one_warp or remembered or fuse" \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-400
timeout 150 python3 scripts/probe_gemv_launch.py --k 5 \
  --shapes 28672x4096,37888x3584,152064x3584,34816x5120,151936x5120,llama70b_gu,llama8b_gu,57344x4096 \
  --ms 2,4 --settings "1,1:1:0,1:1:2:0:8:2,1:1:2:0:8:4,1:1:2:0:8:8" --reps 3 --out $OUT/k5 > $OUT/k5.log 2>&1
echo "k5 rc=$?"; grep -E "^\|" $OUT/k5.log | cut -c1-220
timeout 120 python3 scripts/probe_gemv_launch.py --k 4 \
  --shapes 25600x2048,65536x2048,151936x2048,12800x2048 \
  --ms 1,2,4 --settings "1,1:1:0,1:1:2:0:8:2,1:1:2:0:8:4,1:1:2:0:8:8" --reps 3 --out $OUT/k2048 > $OUT/k2048.log 2>&1
echo "k2048 rc=$?"; grep -E "^\|" $OUT/k2048.log | cut -c1-220
SAN_TAIL=2 sanitize_run racecheck 200 gemv-decode-path
SAN_TAIL=2 sanitize_run memcheck 90 gemv-decode-path
