#!/usr/bin/env bash
# Session 27, device run 8 (carried build): the cluster split at k >= 4 only (run 7: at k = 2 and 3 it lost 0-1.2
# us on 70B). The numbers of record: kbit.gemm against cuBLAS fp16 at M = 1-4 for k = 2-5 on four shapes, and
# the split against the plain kernel at k = 2 and 4 on 70B; then the GPU tests the split touches: the GEMM and
# GEMV tests, tensors past 2^31 elements (k = 5: the split over 4097 tiles of 128 groups), PDL, nn and blocks.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,2,3,4 \
  --ks 2,3,4,5 --out $R/gemm-ks > $R/gemm-ks.log 2>&1; echo "gemm-ks rc=$?"
grep -A18 "llama70b_gu" $R/gemm-ks/*.md | grep "^| [2-5] |" | tr -s ' ' | tr '\n' ';'; echo
for k in 2 4; do
  timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama70b_gu --ms 1,4 --k $k \
    --settings 1:1:1:0:8:0:0,1:1 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_large_tensors.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_block.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
