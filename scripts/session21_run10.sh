#!/usr/bin/env bash
# Session 21, device run 10 (as run 9): MoE decode over all experts with top-8 routing of 1-8 tokens at
# random, 1 / 2 / 4 rows per chunk (scripts/probe_moe_sparse.py --topk 8), then the test files run 9's
# timeout cut short (test_dependent_launch, test_opcheck, benchmarks/tests).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s21; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_moe_sparse.py --experts 128,512 --topk 8 --tokens 1,2,4,8 --forms 2 --chunk-rows 0,2,4 \
  --out $R/topk > $R/topk.log 2>&1; grep "^|" $R/topk.log; tail -3 $R/topk.log | grep -v "^|"
timeout 330 python3 -m pytest tests/test_dependent_launch.py tests/test_opcheck.py benchmarks/tests -q --maxfail=10 \
  > $R/tests-other.log 2>&1; tail -1 $R/tests-other.log; grep -E "^(FAILED|ERROR)" $R/tests-other.log | head -5
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
