#!/usr/bin/env bash
# Session 29, device run 3 (carried build): why the x-resident GEMV at 8 token slots is 19% slower at k = 4 than at
# k = 3 on Llama-3 8B gate/up (run 2: M = 8 17.25 against 14.43 us; k = 2 14.41; at M = 4, 4 slots, k = 4 13.72).
# Nsight Compute on M = 8 at k = 3 and 4 (the rule's plans), and k = 4 at M = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
python3 -c "
import kbit
for k, M in ((3, 8), (4, 8), (4, 4)): print(k, M, kbit._C._gemv_launch_plan(M, 14336, 4096, k, 'mma'))" > $R/plans.log 2>&1
cat $R/plans.log
METRICS="breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed"
METRICS="$METRICS,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
METRICS="$METRICS,smsp__inst_executed.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max,dram__bytes_read.sum,lts__t_bytes.sum"
for cfg in "k3m8:3:8" "k4m8:4:8" "k4m4:4:4"; do
  IFS=: read label k M <<< "$cfg"
  timeout 100 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section InstructionStats --metrics "$METRICS" \
    python3 scripts/ncu_gemm.py --op gemv_gemm --k $k --M $M --N 14336 --K 4096 > $R/ncu_8b_$label.txt 2>&1
  echo "== $label rc=$?"
  grep -E "Duration|Registers|Shared Memory Config|Dynamic Shared|Block Limit|Achieved Occ|Theoretical Occ|Eligible|Issued Warp|No Eligible|Stall|DRAM Through|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|dram__bytes|lts__t_bytes|inst_executed.sum|cycles_active|bank_conflicts|wavefronts_mem_shared_op_ld|Compute \(SM\) Th|Memory Throughput" $R/ncu_8b_$label.txt | tr -s ' ' | head -40
done
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
