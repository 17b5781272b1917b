#!/usr/bin/env bash
# Session 28, device run 3 (carried build): the GEMV's x loads only by the lanes whose B columns are stored (run
# 2's Nsight Compute: a block's x LDS.128 took 4 L1 wavefronts, 32 of an M = 1 item's ~137, for 64 distinct
# bytes; L1 wavefronts were 72% of the SMs' active cycles). The GEMV tests, then the A/B of run 1 (rule, wide
# forced, plain without the split), then Nsight Compute's L1 counts on 8B M = 1 again.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down,KV --ms 1,2,3,4 --k 4 \
  --settings 1:1,1:1:1:0:8:0:0:1:1,1:1:1:0:8:0:0 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
METRICS="l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
METRICS="$METRICS,smsp__inst_executed.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max"
METRICS="$METRICS,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,sm__issue_active.avg.pct_of_peak_sustained_elapsed"
for cfg in "plain:0" "wide:1"; do
  label=${cfg%%:*}; wide=${cfg#*:}
  timeout 90 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --metrics "$METRICS" \
    python3 scripts/ncu_gemm.py --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 0 --wide $wide \
    > $R/ncu_8b_m1_$label.txt 2>&1
  echo "== $label rc=$?"
  grep -E "l1tex__|sm__|smsp__inst|gpc__|Duration|L1/TEX Cache Throughput" $R/ncu_8b_m1_$label.txt | tr -s ' '
done
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
