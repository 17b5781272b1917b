#!/usr/bin/env bash
# Session 48, device run 11: where the x-resident GEMV's time goes now (session 47 run 8's Nsight Compute command on
# the final build): Qwen3 gate/up at M = 8 and 16, one call each under the rule; the details page as text, the SASS
# samples as CSV for scripts/ncu_sass_summary.py.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
python3 -c "import kbit; [print(n, M, dict(kbit._C._gemv_launch_plan(M, N, K, 4))) for n, M, N, K in
(('gu', 8, 5120, 2048), ('gu', 16, 5120, 2048))]"
for c in "gu8:--M 8 --N 5120 --K 2048" "gu16:--M 16 --N 5120 --K 2048"; do
  label=${c%%:*}
  timeout 120 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats \
    --section InstructionStats --section LaunchStats --section Occupancy --section SourceCounters \
    --import-source no -o /tmp/ncu-$label python3 scripts/ncu_gemm.py --op gemv_gemm --k 4 ${c#*:} \
    > /tmp/ncu-$label.log 2>&1; echo "ncu $label rc=$?"
  ncu --import /tmp/ncu-$label.ncu-rep --page details > $OUT/$label-details.txt 2>&1
  ncu --import /tmp/ncu-$label.ncu-rep --page source --csv --print-source sass > /tmp/$label-sass.csv 2>/dev/null
  xz -T4 -c /tmp/$label-sass.csv > $OUT/$label-sass.csv.xz
  grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps" \
    $OUT/$label-details.txt | head -12
done
