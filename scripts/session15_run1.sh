#!/usr/bin/env bash
# Session 15, device run 1 (carried build, scripts/build_py312.sh): x-resident dense GEMV (each warp
# copies its groups of x once; codes-only rings of 4 stages) and dense token chunks (M = 17..64).
# The GEMV tests, then the A/B (staged 1:1:0 vs resident where it fits 1:1:2, fp16 cuBLAS and the
# wgmma / tile kernels beside), then the rest of the GPU suite.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s15; start_device_run || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $OUT/tests-gemm.log 2>&1; tail -3 $OUT/tests-gemm.log
timeout 170 python3 scripts/probe_gemv_launch.py --shapes Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,4,8,16,32,64 \
  --settings 1:1:0,1:1:2 --reps 2 --baselines fp16,wgmma,tile --out $OUT > $OUT/probe.log 2>&1; tail -40 $OUT/probe.log
timeout 240 python3 -m pytest tests -q --maxfail=20 --ignore=tests/test_cuda_gemm.py > $OUT/tests-rest.log 2>&1
tail -5 $OUT/tests-rest.log
