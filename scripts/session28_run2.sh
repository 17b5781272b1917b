#!/usr/bin/env bash
# Session 28, device run 2 (carried build): where the decode GEMV's L1 / shared-memory throughput goes. Run 1: the
# wide pair table (a quarter fewer instructions an item) ran no faster (8B M = 1 13.07 against 12.98 us), and
# session 26's ncu had L1/TEX throughput at 72% of the elapsed cycles (issue 43%). Nsight Compute on 8B gate/up at
# M = 1, plain and wide: the L1 throughput's breakdown, shared-memory wavefronts by kind, the instruction mix.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
METRICS="breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed"
METRICS="$METRICS,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
METRICS="$METRICS,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
METRICS="$METRICS,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_lg.sum"
METRICS="$METRICS,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed.sum"
METRICS="$METRICS,sm__cycles_active.avg,gpc__cycles_elapsed.max,l1tex__lsuin_requests.sum,smsp__inst_executed_pipe_lsu.sum"
for cfg in "plain:0" "wide:1"; do
  label=${cfg%%:*}; wide=${cfg#*:}
  timeout 120 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section InstructionStats --metrics "$METRICS" \
    python3 scripts/ncu_gemm.py --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 0 --wide $wide \
    > $R/ncu_8b_m1_$label.txt 2>&1
  echo "== $label rc=$?"
  grep -E "l1tex__|sm__|smsp__inst|gpc__|Duration|Shared|L1/TEX Cache Throughput" $R/ncu_8b_m1_$label.txt | tr -s ' ' | head -70
done
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
