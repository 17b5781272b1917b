#!/usr/bin/env bash
# Session 38, device run 5 (d7395ad's csrc): where one warp per unit with x shared starts to pay against the halving
# rule's 2 warps per unit (k = 2: two 8-warp CTAs per SM, 2112 slots at one warp per unit): Qwen3 MoE gate/up and
# down, 16-56 experts x 4 and 8 rows, k = 2 and 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
for k in 2 4; do
  timeout 150 python3 scripts/probe_grouped_schedule.py --k $k --experts 16,24,32,40,48,56 --per-expert 4,8 \
    --settings 2:1,2:1:8:1,2:1:8:2 --reps 3 --out $R/probe-k$k > $R/probe-k$k.log 2>&1; echo "probe k=$k rc=$?"
  grep "^| moe" $R/probe-k$k.log
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
