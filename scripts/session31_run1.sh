#!/usr/bin/env bash
# Session 31, device run 1: the wgmma step's cost with its data resident (benchmarks/micro/wgmma_step.cu, built on the
# CPU machine, carried as exp_variants/wgmma_step): no decode, the pair table, the codebook in registers; then the
# GPU tests session 30 left unrun on main's build (84e8c86): test_block's capture test and the wgmma tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee $R/gpu.txt
timeout 60 exp_variants/wgmma_step 256 | tee $R/wgmma_step-256.md
timeout 30 exp_variants/wgmma_step 32 | tee $R/wgmma_step-32.md
timeout 200 python3 -m pytest tests/test_block.py tests/test_cuda_gemm.py -k "wgmma or captures" -q \
  > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
