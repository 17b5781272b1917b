#!/usr/bin/env bash
# Session 28, device run 9 (carried build, runs 7-8's sources): run 8's 19 failures were the new tests' own: the
# decode x-resident test took its float64 reference on the GPU (tests/reference.py builds CPU index tensors) and
# its plan test expected x resident on the 8B size at every k (at k = 2, 3, 5 the staged grid fits 4 CTAs per SM:
# 1.7 rounds). Those tests and the GEMV plan tests again.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q \
  -k "decode_x_resident or staged_layout or cluster_split_plan or gemv_launch_plan or x_resident" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
