#!/usr/bin/env bash
# Session 30, device run 2 (carried build): Nsight Compute's per-SASS-instruction stall samples of the wgmma
# kernel (SourceCounters; exported with --page source --print-source sass) on Qwen3 Q M = 64 (two warpgroups x 64
# tokens, x staged, 3 splits), Llama-3 8B gate/up M = 16 (four warpgroups x 16, image, 2 splits) and M = 128 (two
# x 128, image): which instructions of the consumer step the warps wait on. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s30; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters --import-source no"
while IFS= read -r line; do
  label=${line%%:*}; args=${line#*:}
  echo "== ncu $label:$args"
  timeout 120 ncu --clock-control none --kernel-name regex:wgmma_gemm_kernel --launch-skip 3 --launch-count 1 $SECTIONS \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio -o $R/$label \
    python3 scripts/ncu_gemm.py --op wgmma_gemm $args > $R/$label.log 2>&1; echo "rc=$?"
  ncu -i $R/$label.ncu-rep --print-details all > $R/$label.txt 2>&1
  ncu -i $R/$label.ncu-rep --page source --csv --print-source sass > $R/$label-sass.csv 2>$R/$label-sass.err
  wc -l $R/$label-sass.csv; head -c 600 $R/$label-sass.err
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Registers Per" $R/$label.txt | head -8
  grep -E "issue_stalled" $R/$label.txt | awk '$NF > 0.1' | sort -k3 -rn | head -10
done <<'SHAPES'
q_m64: --k 4 --M 64 --N 4096 --K 2048
l8b_m16: --k 4 --M 16 --N 14336 --K 4096
l8b_m128: --k 4 --M 128 --N 14336 --K 4096
SHAPES
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
