#!/usr/bin/env bash
# Session 17, device run 2 (carried build: the wgmma kernel issues one stage before its first barrier
# and its lookups two steps ahead): the wgmma op's timings (Llama-3 8B / 70B gate/up, Qwen3 gate/up
# and down, M = 16-128; compare run 1), ncu stall reasons on 8B M = 16 / 64, then test_cuda_gemm.py
# (the decode helper is shared by every kernel); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r2; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes llama8b_gu,llama70b_gu,gateup,down \
  --ms 16,32,64,128 --ks 4 --out $R/ab > $R/ab.log 2>&1
cat $R/ab/*.md | grep -E "^\||^##" | grep -v -- "---"
SHAPES="8b_m64: --op wgmma_gemm --k 4 --M 64 --N 14336 --K 4096
8b_m16: --op wgmma_gemm --k 4 --M 16 --N 14336 --K 4096" \
  KERNEL=wgmma_gemm_kernel STALLS=1 OUT=$R timeout 200 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
grep -E "== ncu|issue_stalled|Duration|SM Active|Issued Ipc" $R/ncu-summary.log | cut -c1-120
timeout 60 python3 -m benchmarks.bench_dispatch --out $R/dispatch > $R/dispatch.log 2>&1; tail -12 $R/dispatch.log
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
tar -czf $OUT/run2.tar.gz -C $R .
