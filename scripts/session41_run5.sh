#!/usr/bin/env bash
# Session 41, device run 5 (the final csrc: one warp per unit at one token slot from 2/3 of the slots): Qwen3 MoE
# gate/up 40 / 48 / 64 x 1 and down 8 / 12 / 16 / 24 x 1 (the rule against 2 warps per unit forced), k = 4; the grouped
# and plan tests of test_cuda_gemm.py and the MoE tests (logs straight into $OUT).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
probe() {  # label shape experts
  timeout 80 python3 scripts/probe_grouped_schedule.py --k 4 --shapes $2 --experts $3 --per-expert 1 \
    --settings 2:1,2:1:8:2 --reps 3 --out $R/$1 > $OUT/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $OUT/probe-$1.log
}
probe gu1 moe_gu 40,48,64
probe dn1 moe_dn 8,12,16,24
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -k "grouped or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 120 python3 -m pytest tests/test_moe_ops.py -q > $OUT/tests-moe.log 2>&1
echo "tests-moe rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-moe.log | head -12 | cut -c1-300
