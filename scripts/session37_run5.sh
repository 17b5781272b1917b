#!/usr/bin/env bash
# Session 37, device run 5 (profiles): Nsight Compute on the grouped GEMV at 64 experts x 8 tokens (Qwen3 MoE down and
# gate/up; 1.28x / 1.52x of fp16 bmm against the 2.0x asked) and on the dense GEMV at k = 5, M = 1 (Llama-3 8B
# gate/up, 7% slower than layout version 3's), with the warp stall breakdown.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
SHAPES="moe_dn_64x8: --k 4 --M 8 --N 2048 --K 512 --experts 64
moe_gu_64x8: --k 4 --M 8 --N 512 --K 2048 --experts 64
moe_dn_64x1: --k 4 --M 1 --N 2048 --K 512 --experts 64
8b_k5_m1: --k 5 --M 1 --N 14336 --K 4096
8b_k4_m1: --k 4 --M 1 --N 14336 --K 4096" KERNEL=scalar_gemv STALLS=1 OUT=$R timeout 400 bash scripts/ncu_gemm.sh 2>&1 \
  | tee $R/ncu.log | cut -c1-200
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
