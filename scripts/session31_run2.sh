#!/usr/bin/env bash
# Session 31, device run 2: benchmarks/micro/wgmma_step.cu with the wide pair table (mode 3) and the lookups without
# the scale's multiply (mode 4) next to run 1's modes (carried as exp_variants/wgmma_step, built on the CPU machine).
set -uo pipefail
cd "$(dirname "$0")/.."
R=/tmp/s31/r${RUN:-2}; mkdir -p $R; OUT=${OUT:-out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee $R/gpu.txt
timeout 90 exp_variants/wgmma_step 256 | tee $R/wgmma_step-256.md
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
