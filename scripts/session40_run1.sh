#!/usr/bin/env bash
# Session 40, device run 1 (be72bf6's build): session 39's launch-rule mends on the GPU (the x-shared and plan
# tests); Nsight Compute source counters of the grouped x-shared GEMV on the current build, Qwen3 MoE 64 x 8 down and
# gate/up (k = 4); the MoE x-shared cells over 64-256 experts x 8 (what a unit's fixed costs are, by the slope).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters --import-source no"
while IFS= read -r line; do
  label=${line%%:*}; args=${line#*:}
  timeout 100 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 $SECTIONS \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio -o $R/$label \
    python3 scripts/ncu_gemm.py $args > $R/$label.log 2>&1; echo "ncu $label rc=$?"
  ncu -i $R/$label.ncu-rep --page source --csv --print-source sass > $OUT/$label-sass.csv 2>$R/$label-sass.err
  ncu -i $R/$label.ncu-rep --print-details all > $OUT/$label.txt 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Executed Instructions  |No Eligible" $OUT/$label.txt | head -6
done <<'SHAPES'
dn64x8: --k 4 --M 8 --experts 64 --N 2048 --K 512
gu64x8: --k 4 --M 8 --experts 64 --N 512 --K 2048
SHAPES
timeout 150 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 64,128,256 --per-expert 8 \
  --settings 2:1 --reps 3 --out $R/slope > $OUT/slope.log 2>&1
echo "slope rc=$?"; grep "^| " $OUT/slope.log
