#!/usr/bin/env bash
# Session 40, device run 5 (the final csrc: runs of 4 or 2 wherever they keep the critical path): runs of 4 / 2 / 1 on
# Qwen3 MoE down 64 / 512 x 8 and GLM MoE down 64 x 8 (rule / U = 2 / U = 1); racecheck on the x-shared cases (runs of
# 4 among them); test_cuda_gemm.py whole (logs straight into $OUT; a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 70 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_dn --experts 64,512 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:0:2,2:1:8:0:1:0:1 --reps 3 --out $R/runs > $OUT/probe-runs.log 2>&1
echo "probe runs rc=$?"; grep "^| " $OUT/probe-runs.log
timeout 40 python3 scripts/probe_grouped_schedule.py --k 4 --shapes glm_moe_dn --experts 64 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:0:2,2:1:8:0:1:0:1 --reps 3 --out $R/runs-glm > $OUT/probe-runs-glm.log 2>&1
echo "probe runs-glm rc=$?"; grep "^| " $OUT/probe-runs-glm.log
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
  > $OUT/racecheck-shared-x.log 2>&1; echo "racecheck shared-x rc=$?"; tail -2 $OUT/racecheck-shared-x.log | cut -c1-300
timeout 330 python3 -m pytest tests/test_cuda_gemm.py -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
