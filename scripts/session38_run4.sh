#!/usr/bin/env bash
# Session 38, device run 4 (d7395ad's csrc): the grouped GEMV tests; then the grouped probe at k = 2, 3, 5: the rule
# (whose warps-per-unit halving leaves 2 warps per unit, x staged, at 64 x 8 for k = 2) against one warp per unit
# with x shared and with x staged, Qwen3 MoE experts.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -q \
  -k "shared_x or grouped_gemv or resources or grouped_gemm" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed|Timeout" $R/tests.log | head -20 | cut -c1-300
for k in 2 3 5; do
  timeout 100 python3 scripts/probe_grouped_schedule.py --k $k --experts 64,512 --per-expert 4,8 \
    --settings 2:1,2:1:8:1,2:1:8:1:0 --reps 3 --out $R/probe-k$k > $R/probe-k$k.log 2>&1; echo "probe k=$k rc=$?"
  grep "^| moe" $R/probe-k$k.log
done
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
