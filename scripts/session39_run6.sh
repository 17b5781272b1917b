#!/usr/bin/env bash
# Session 39, device run 6: Nsight Compute source counters (SASS lines: executed instructions, stall samples) on the
# GEMV at Llama-3 8B gate/up M = 1 and 8 and the grouped decode call (Qwen3 MoE gate/up, 8 experts x 1 row), k = 4,
# for other waits like the row scale's; the step to one warp per unit from 3 (GLM MoE 8 x 8: the rule against W = 3);
# the x-shared and plan tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
SECTIONS="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters --import-source no"
while IFS= read -r line; do
  label=${line%%:*}; args=${line#*:}
  timeout 100 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 $SECTIONS \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio -o $R/$label \
    python3 scripts/ncu_gemm.py $args > $R/$label.log 2>&1; echo "ncu $label rc=$?"
  ncu -i $R/$label.ncu-rep --page source --csv --print-source sass > $OUT/$label-sass.csv 2>$R/$label-sass.err
  ncu -i $R/$label.ncu-rep --print-details all > $R/$label.txt 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Executed Instructions  |No Eligible|Block Size|Grid Size|Registers Per" $R/$label.txt | head -8
done <<'SHAPES' 2>&1 | tee $OUT/ncu.log
d8b_m1: --k 4 --M 1 --N 14336 --K 4096
d8b_m8: --k 4 --M 8 --N 14336 --K 4096
g8x1: --k 4 --M 1 --experts 8 --N 512 --K 2048
SHAPES
timeout 60 python3 scripts/probe_grouped_schedule.py --k 4 --shapes glm_moe_dn,glm_moe_gu --experts 8,12 --per-expert 8 \
  --settings 2:1,2:1:8:3 --reps 3 --out $R/glm > $OUT/probe.log 2>&1
echo "probe rc=$?"; grep "^| " $OUT/probe.log
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
