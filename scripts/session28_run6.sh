#!/usr/bin/env bash
# Session 28, device run 6 (carried build, run 5's): run 5 had x resident (forced where it fits) 8-14% ahead on
# 70B at M = 2-4 with 8 warps per unit (40.5-42.4 us against the rule's 45.0-47.1), behind on 8B where its plan
# took 16 warps per unit; one unit per CTA without the split ahead of the split on 70B M = 1 (40.1 against 41.3).
# A/B at M = 1-4 on six shapes: the rule, one unit per CTA without the split, the wide table, x resident forced
# with 4 and with 8 warps per unit.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 280 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down,glm_shared_gu --ms 1,2,3,4 \
  --k 4 --settings 1:1,1:1:1:0:8:0:0,1:1:1:0:8:0:0:1:2,1:1:2:0:8:4:0,1:1:2:0:8:8:0 \
  --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
