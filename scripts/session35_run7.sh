#!/usr/bin/env bash
# Session 35, device run 7 (the same build as run 6): the wgmma graph test (staged now forced at M = 16) with the
# plan tests, then every other test file and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s35; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn)\.py")
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -k "wgmma_gemm_graph or staging_rule or launch_plan" > $R/tests-graph.log 2>&1
echo "graph tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests-graph.log | tail -4 | cut -c1-300
timeout 420 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
