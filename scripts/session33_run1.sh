#!/usr/bin/env bash
# Session 33, device run 1 (and 2, with modes 5-6 through L2): the split-K reduction's ways through the cluster (benchmarks/micro/split_reduce.cu, built on
# the CPU machine, carried as exp_variants/split_reduce): pull (the kernel's), pull with 4 float4s in flight, push from
# registers, push copies, push by bulk copy; 2-4 splits, 128 x 128 / 64 x 128 / 64 x 256 tiles.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=/tmp/s33; R=$LOGS/r${RUN:-1}; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 120 exp_variants/split_reduce/split_reduce 20 | tee $R/split_reduce.md
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
