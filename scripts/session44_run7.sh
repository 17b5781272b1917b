#!/usr/bin/env bash
# Session 44, device run 7: run 5's script (test_cuda_gemm.py whole and benchmarks/tests; kbit.gemm against cuBLAS at
# M = 128-4096, fp16 and bf16) on the final csrc: persistent CTAs in the 128-token shape, the table re-merged with run
# 6's sweeps.
exec bash "$(dirname "$0")/session44_run5.sh" "$@"
