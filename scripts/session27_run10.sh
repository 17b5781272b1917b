#!/usr/bin/env bash
# Session 27, device run 10 (carried build): after the final read's mends (the cluster barrier halves and the
# remote store moved to cluster.cuh, one steps-per-tile helper): the GEMV tests and the wgmma kernel's tests
# (cluster.cuh is its too) of tests/test_cuda_gemm.py.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s27; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -k "gemv or wgmma" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -2 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
