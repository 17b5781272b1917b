#!/usr/bin/env bash
# Session 16, device run 6 (carried build of f02ea6b, the final kernels, rule and table): the whole GPU
# suite, then Nsight Compute stall profiles of the dense GEMV where #6 is still short (Llama-3 8B
# gate/up M = 8, Qwen3 gate/up M = 16); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r6; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 330 python3 -m pytest tests -q --maxfail=20 -rs --durations=12 --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1
tail -6 $R/tests-rest.log
OUT=$R KERNEL=scalar_gemv STALLS=1 SHAPES="gemv_8b_m8: --k 4 --M 8 --N 14336 --K 4096 --op gemv_gemm
gemv_gateup_m16: --k 4 --M 16 --N 5120 --K 2048 --op gemv_gemm" timeout 50 bash scripts/ncu_gemm.sh 2>&1 | tail -60
tar -czf $OUT/run6.tar.gz -C $R .; cp $R/tests-*.log $OUT/
