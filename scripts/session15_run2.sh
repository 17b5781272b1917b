#!/usr/bin/env bash
# Session 15, device run 2 (carried build): after run 1, x resident by the rule (from 8 token slots
# where it keeps the warps per SM of staged x) and token chunks without per-unit division. The
# GEMV / gemm test file, the rule's A/B (staged 1:1:0, rule 1:1:1, everywhere it fits 1:1:2), then
# the dispatch table's sweep (the GEMV now up to M = 64), tarred with the rest into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s15; R=$LOGS/r2; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
timeout 60 python3 scripts/probe_gemv_launch.py --shapes Q,O,gateup,llama8b_gu,llama70b_gu --ms 8,16,32 \
  --settings 1:1:0,1:1:1,1:1:2 --reps 2 --out $R/probe > $R/probe.log 2>&1; tail -16 $R/probe.log
TUNE_TIMEOUT=300 timeout 310 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -2 $R/tune.log | cut -c1-400
tar -czf $OUT/run2.tar.gz -C $R .; cp $R/tests-cuda-gemm.log $R/probe.log $OUT/
