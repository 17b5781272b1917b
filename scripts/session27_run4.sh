#!/usr/bin/env bash
# Session 27, device run 4 (carried build of 4848c58's sources): where the cluster split's extra ~1 us goes
# (run 3: 8B M = 1 13.1 us in clusters of 2 against 13.0 plain, where its critical path is 7 steps against 8;
# KV, whose steps are whole tiles, 3.1 against 2.4). Nsight Compute with stall reasons on the plain kernel
# and the split (clusters of 2) at M = 1: 8B gate/up, 70B gate/up, KV.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s27; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
SHAPES="l8b_plain: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 0
l8b_split2: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 2
l70b_plain: --op gemv_gemm --k 4 --M 1 --N 28672 --K 8192 --split 0
l70b_split2: --op gemv_gemm --k 4 --M 1 --N 28672 --K 8192 --split 2
kv_plain: --op gemv_gemm --k 4 --M 1 --N 512 --K 2048 --split 0
kv_split2: --op gemv_gemm --k 4 --M 1 --N 512 --K 2048 --split 2" \
  KERNEL=scalar_gemv STALLS=1 OUT=$R timeout 250 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
echo "ncu rc=$?"; grep -E "^== |Duration|Issued Ipc|Achieved Occ|Warp Cycles Per Issued|issue_stalled|Executed Ipc A|SM Busy|DRAM Through|Theoretical Occ|Registers" $R/ncu-summary.log | cut -c1-150
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
