#!/usr/bin/env bash
# Nsight Compute on the tensor-core GEMM for a few shapes (GPU machine, after a build).
# Each line of SHAPES is "label: args for scripts/ncu_gemm.py". Reports land in ${OUT:-out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
SHAPES=${SHAPES:-"70b_m1: --k 4 --M 1 --N 28672 --K 8192
gateup_m1: --k 4 --M 1 --N 5120 --K 2048
70b_m16: --k 4 --M 16 --N 28672 --K 8192"}
while IFS= read -r line; do
  [ -z "$line" ] && continue
  label=${line%%:*}; args=${line#*:}
  echo "== ncu $label:$args"
  ncu --kernel-name regex:tc_gemm --launch-skip 3 --launch-count 1 $SECTIONS \
    python3 scripts/ncu_gemm.py $args > "$OUT/ncu_$label.txt" 2>&1
  grep -E "Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Issued Ipc|No Eligible|Stall|Warp Cycles Per Issued|Theoretical Occupancy|Block Limit" "$OUT/ncu_$label.txt" | head -40
done <<< "$SHAPES"
