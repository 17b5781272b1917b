#!/usr/bin/env bash
# Session 16, device run 7 (carried build): the grouped GEMV takes its next unit from the copies'
# lookup (one schedule lookup per unit instead of two). Grouped against one dense GEMV over the same
# bytes and fp16 bmm (the dense kernel is unchanged: the ratio is the A/B), then the whole GPU suite.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r7; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_grouped_schedule.py --shapes moe_gu,moe_dn --experts 8,64,256 --per-expert 1,4 --reps 2 \
  --settings 2:0 --out $R/probe > $R/probe.log 2>&1; grep "^|" $R/probe.log
timeout 170 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 330 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1
tail -3 $R/tests-rest.log
tar -czf $OUT/run7.tar.gz -C $R .; cp $R/tests-*.log $R/probe.log $OUT/
