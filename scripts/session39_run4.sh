#!/usr/bin/env bash
# Session 39, device run 4 (24d06a8's csrc): Nsight Compute with source counters (SASS per line: executed
# instructions, stall samples) on the grouped x-shared GEMV, Qwen3 MoE 64 x 8 down and gate/up, k = 4; the new rule at
# k = 3 and 5 on gate/up 24-40 x 8 (rule / W = 2 / W = 1); 2 against 3 stages at 512 x 8 (5 reps); the x-shared tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
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
for k in 5 3; do
  timeout 60 python3 scripts/probe_grouped_schedule.py --k $k --shapes moe_gu --experts 24,32,40 --per-expert 8 \
    --settings 2:1,2:1:8:2,2:1:8:1 --reps 3 --out $R/gu-k$k > $OUT/gu-k$k.log 2>&1
  echo "gu k=$k rc=$?"; grep "^| " $OUT/gu-k$k.log
done
timeout 120 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 64,512 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:3 --reps 5 --out $R/stages > $OUT/stages.log 2>&1
echo "stages rc=$?"; grep "^| " $OUT/stages.log
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
