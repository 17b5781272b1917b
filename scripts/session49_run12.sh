#!/usr/bin/env bash
# Session 49, device run 12 (the passes' A/B was not run: they lost in run 10): why the x-resident GEMV at 8 token
# slots is slower on K = 8192 (Llama-3 70B gate/up, 28672 x 8192) than on the same bytes at K = 4096 (57344 x 4096).
# Nsight Compute on one gemv_gemm call each (gpu_build.sh's ncu_profile): 70B at M = 4 and 8, 57344 x 4096 at M = 8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
ncu_profile g70-m8 --op gemv_gemm --M 8 --N 28672 --K 8192
ncu_profile g70-m4 --op gemv_gemm --M 4 --N 28672 --K 8192
ncu_profile g57-m8 --op gemv_gemm --M 8 --N 57344 --K 4096
for l in g70-m8 g70-m4 g57-m8; do echo "== $l"; grep -E "Stall|Long Scoreboard|L2 Hit|DRAM Throughput|Mem Busy|Achieved Occ|Registers Per|Block Limit|Executed Ipc A" $OUT/$l-details.txt | head -16; done
