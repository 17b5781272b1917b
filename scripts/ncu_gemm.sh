#!/usr/bin/env bash
# Nsight Compute on the tensor-core GEMM for a few shapes (GPU machine, after a build).
# Each line of SHAPES is "label: args for scripts/ncu_gemm.py". Reports land in ${OUT:-out}/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
# KERNEL=regex for the kernel to profile (default tc_gemm; scalar_gemv with --op gemv_gemm, tile_gemm with --op tile_gemm,
# wgmma_gemm_kernel with --op wgmma_gemm).
# The GPU's clocks are left as they are (--clock-control none: the device notes' advice; before session 26 ncu
# locked them to base while it profiled).
# STALLS=1: also the per-reason warp stall breakdown (cycles per issued instruction).
# SOURCE=1: also the SASS lines with the most stall samples (SourceCounters).
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats"
SHAPES=${SHAPES:-"70b_m1: --k 4 --M 1 --N 28672 --K 8192
gateup_m1: --k 4 --M 1 --N 5120 --K 2048
70b_m16: --k 4 --M 16 --N 28672 --K 8192"}
while IFS= read -r line; do
  [ -z "$line" ] && continue
  label=${line%%:*}; args=${line#*:}
  echo "== ncu $label:$args"
  extra=""
  [ -n "${STALLS:-}" ] && extra="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  [ -n "${SOURCE:-}" ] && extra="$extra --section SourceCounters --import-source no"
  ncu --clock-control none --kernel-name regex:${KERNEL:-tc_gemm} --launch-skip 3 --launch-count 1 $SECTIONS $extra \
    python3 scripts/ncu_gemm.py $args > "$OUT/ncu_$label.txt" 2>&1
  [ -n "${STALLS:-}" ] && grep -E "issue_stalled" "$OUT/ncu_$label.txt" | awk '$NF > 0.05' | sort -k3 -rn | head -12
  grep -E "Pipe|Duration|Memory Throughput|DRAM Throughput|Registers Per|Achieved Occupancy|Issued Ipc|No Eligible|Stall|Warp Cycles Per Issued|Theoretical Occupancy|Block Limit" "$OUT/ncu_$label.txt" | head -40
done <<< "$SHAPES"
