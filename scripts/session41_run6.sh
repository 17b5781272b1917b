#!/usr/bin/env bash
# Session 41, device run 6 (the final csrc: 1 or 2 warps per unit at one token slot by the critical path): Qwen3 MoE
# down 24 / 32 / 512 x 1 and gate/up 72 x 1 (the rule / 1 / 2 warps per unit), k = 4; the grouped plan and row-schedule
# tests (logs straight into $OUT).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
probe() {  # label shape experts
  timeout 90 python3 scripts/probe_grouped_schedule.py --k 4 --shapes $2 --experts $3 --per-expert 1 \
    --settings 2:1,2:1:8:1,2:1:8:2 --reps 3 --out $R/$1 > $OUT/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $OUT/probe-$1.log
}
probe dn1 moe_dn 24,32,512
probe gu1 moe_gu 72
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "launch_plan or row_schedule or warp_schedule" -q \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
