#!/usr/bin/env bash
# Session 26, device run 8 (carried build of 9a01cfe's sources): where the decode GEMV's time goes on the H200
# (8B gate/up at M = 1 takes ~12-13 us at k = 2, 3 and 4 alike, 1.4-2.4 TB/s, while cuBLAS reads ~3.8 TB/s):
# Nsight Compute with stall reasons on gemv_gemm, 8B gate/up M = 1 at k = 4 and k = 2, 70B gate/up M = 1 at k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s26; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
SHAPES="l8b_m1_k4: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096
l8b_m1_k2: --op gemv_gemm --k 2 --M 1 --N 14336 --K 4096
l70b_m1_k4: --op gemv_gemm --k 4 --M 1 --N 28672 --K 8192" \
  KERNEL=scalar_gemv STALLS=1 OUT=$R timeout 200 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
echo "ncu rc=$?"; cat $R/ncu-summary.log | cut -c1-160
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
