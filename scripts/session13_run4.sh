#!/usr/bin/env bash
# Session 13, device run 4: the second half of the GPU suite (every test file but
# tests/test_cuda_gemm.py, whose run 3 result stands: only test_dependent_launch.py changed since),
# and the host cost per call (bench_dispatch: the GEMV launcher now also looks up the spread).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
timeout 380 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py 2>&1 | tee $OUT/gpu-suite-part2.log | tail -3
timeout 80 python3 -m benchmarks.bench_dispatch --out $LOGS/host > $LOGS/host.log 2>&1; grep "M=  1" $LOGS/host.log
cp $LOGS/host/dispatch.json $OUT/host-cost.json; cp $LOGS/host/*.md $OUT/ 2>/dev/null
