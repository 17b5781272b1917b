#!/usr/bin/env bash
# Session 23, device run 7 (carried build: moe_combine takes y's row count as an argument instead of
# deriving T topk from its grid): the MoE glue, nn and opcheck tests; memcheck on the glue cases.
# Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s23; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_moe_ops.py tests/test_nn.py tests/test_opcheck.py -q --maxfail=10 \
  > $R/tests-moe.log 2>&1; tail -1 $R/tests-moe.log; grep -E "^(FAILED|ERROR)" $R/tests-moe.log | head -5
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda moe-glue \
  > $R/sanitize-moe-memcheck.log 2>&1
echo "memcheck rc=$? $(grep -h "ERROR SUMMARY" $R/sanitize-moe-memcheck.log)"
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
