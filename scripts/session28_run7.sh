#!/usr/bin/env bash
# Session 28, device run 7 (carried build): the new rules. Decode calls of 2-4 rows take x resident where the staged
# grid takes the tiles in two or more rounds (4 groups per warp: 4-8 warps per unit); the cluster split is k = 5
# only. First the rules at k = 2, 3, 5 (run 6 measured k = 4): the rule against x resident off and the split forced
# / off on 8B and 70B at M = 1-4; then the numbers of record (kbit.gemm against cuBLAS fp16 at M = 1-4, k = 2-5,
# four shapes); then the GPU tests the change reaches.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
for k in 2 3 5; do
  timeout 90 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu --ms 1,2,3,4 --k $k \
    --settings 1:1,1:1:0,1:1:0:0:8:0:0,1:1:0:0:8:0:2 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
timeout 120 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,2,3,4 \
  --ks 2,3,4,5 --out $R/gemm-ks > $R/gemm-ks.log 2>&1; echo "gemm-ks rc=$?"
grep -A18 "llama70b_gu\|llama8b_gu" $R/gemm-ks/*.md | grep "^| [2-5] |" | tr -s ' ' | head -40
timeout 330 python3 -m pytest tests/test_cuda_gemm.py tests/test_large_tensors.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_block.py -q -x > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
