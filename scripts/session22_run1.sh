#!/usr/bin/env bash
# Session 22, device run 1: the grouped GEMV's row schedule (RowSchedule, one row per chunk, T <= E)
# against the scans (form 0) in the same build: MoE decode over all experts (scripts/probe_moe_sparse.py,
# 8 active x 1 row and top-8 routing of 1-4 tokens), the compacted MoE sweep cases that take it (64 /
# 256 / 512 experts x 1 token) and 8 x 1 (per-warp schedule, the kernel it shares); then the new and the
# grouped GEMV tests, and compute-sanitizer on the grouped-schedule cases (both forms).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s22; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -k "row_schedule or launch_plan_schedule or warp_schedule" \
  > $R/tests-new.log 2>&1; tail -1 $R/tests-new.log; grep -E "^(FAILED|ERROR)|Error" $R/tests-new.log | head -8
timeout 120 python3 scripts/probe_moe_sparse.py --experts 64,128,512 --active 8 --rows 1 --forms 0,2 \
  --out $R/sparse > $R/sparse.log 2>&1; grep "^|" $R/sparse.log; tail -3 $R/sparse.log | grep -v "^|"
timeout 100 python3 scripts/probe_moe_sparse.py --experts 128,512 --topk 8 --tokens 1,2,4 --forms 0,2 \
  --out $R/topk > $R/topk.log 2>&1; grep "^|" $R/topk.log; tail -3 $R/topk.log | grep -v "^|"
timeout 120 python3 scripts/probe_grouped_schedule.py --experts 8,64,256,512 --per-expert 1 --settings 0:1,2:1 --reps 2 \
  --out $R/sched > $R/sched.log 2>&1; grep "^|" $R/sched.log; tail -3 $R/sched.log | grep -v "^|"
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda grouped-schedule \
  > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -2 $R/memcheck.log
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda grouped-schedule \
  > $R/racecheck.log 2>&1; echo "racecheck rc=$?"; tail -2 $R/racecheck.log
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
