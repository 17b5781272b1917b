#!/usr/bin/env bash
# Session 41, device run 7 (the final csrc: 2 warps per unit at one token slot only where their critical path is at
# most 3/4 of one warp's): Qwen3 MoE down 24 / 512 x 1 and gate/up 72 x 1 (the rule / 1 / 2 warps per unit), k = 4;
# gate/up 512 x 8 (the rule / runs of 2: its plan against session 40's); the grouped and plan tests of
# test_cuda_gemm.py (logs straight into $OUT).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
probe() {  # label shape experts
  timeout 60 python3 scripts/probe_grouped_schedule.py --k 4 --shapes $2 --experts $3 --per-expert 1 \
    --settings 2:1,2:1:8:1,2:1:8:2 --reps 3 --out $R/$1 > $OUT/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $OUT/probe-$1.log
}
probe dn1 moe_dn 24,512
probe gu1 moe_gu 72
timeout 60 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu --experts 512 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:0:2 --reps 3 --out $R/gu8 > $OUT/probe-gu8.log 2>&1
echo "probe gu8 rc=$?"; grep "^| " $OUT/probe-gu8.log
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "grouped or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
