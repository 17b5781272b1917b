#!/usr/bin/env bash
# Session 36, device run 8 (main's final build): the GEMV at M = 1 with x resident (run 7: 70B 39.7 us against the
# rule's 43.5), at the chooser's warps and at 2 / 4 / 8 warps per unit, on Llama-3 70B / 8B, GLM shared and Qwen3
# gate/up, to set the rule.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama70b_gu,llama8b_gu,glm_shared_gu,gateup,down --ms 1 --reps 2 \
  --settings 1:0,1:0:2,1:0:2:0:8:4,1:0:2:0:8:8,1:0:2:0:8:2 --out $R > $R/probe.log 2>&1; echo "probe rc=$?"
tail -8 $R/probe.log | cut -c1-220
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
