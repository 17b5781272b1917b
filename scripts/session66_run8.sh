#!/usr/bin/env bash
# Session 66, run 8 (the final rule: by the critical path at every k, 8 warps per unit and one row at k = 4 only): the
# GEMV plan, decode, gated and fused tests; the rule against session 37's (kbit._C._set_gemv_decode_path_rule(0)) at
# k = 2, 3, 5 on the shapes where the rule changes plans (M = 1, 2, 4).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py tests/test_nn_gated_mlp.py \
  tests/test_nn_fused.py tests/test_opcheck.py \
  -k "plan or gemv_decode or x_resident or by_path or gated or silu or gemv_launch or one_warp or remembered or fuse" \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-400
for k in 2 3 5; do
  timeout 150 python3 scripts/probe_gemv_launch.py --k $k \
    --shapes 28672x4096,37888x3584,152064x3584,34816x5120,151936x5120,llama70b_gu,llama8b_gu \
    --ms 1,2,4 --settings "1,1:1:1:0:8:0:-1:1:-1:0:0" --reps 3 --out $OUT/k$k > $OUT/k$k.log 2>&1
  echo "k=$k rc=$?"; grep -E "^\|" $OUT/k$k.log | cut -c1-200
done
