#!/usr/bin/env bash
# Session 33, device run 9: benchmarks/micro/split_reduce.cu after the review's mends (the proxy fence in mode 6, values
# salted per launch with the first and last timed launch checked, slot sizing), every mode in one run
# (SPLIT_REDUCE_ALL), carried as exp_variants/split_reduce.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=/tmp/s33; R=$LOGS/r${RUN:-9}; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee $R/gpu.txt
SPLIT_REDUCE_ALL=1 timeout 150 exp_variants/split_reduce/split_reduce 20 | tee $R/split_reduce.md
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
