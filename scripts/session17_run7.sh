#!/usr/bin/env bash
# Session 17, device run 7 (carried build of main: session 16's kernels + the GEMV launch-plan memo):
# the host cost per call (bench_dispatch), then the whole GPU suite; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r7; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m benchmarks.bench_dispatch --out $R/dispatch > $R/dispatch.log 2>&1
grep -E "kbit.gemm  |gemm_direct  |torch.add\(x" $R/dispatch.log
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 330 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1; tail -2 $R/tests-rest.log
tar -czf $OUT/run7.tar.gz -C $R .
