#!/usr/bin/env bash
# Session 54, device run 6, the final build (run 5's kernels): Nsight Compute on Llama-3 70B gate/up at M = 384 and
# Qwen3 Q at M = 256, the rule against stream-K (where the time goes: DRAM and L2 bytes, SM and tensor throughput),
# then test_cuda_gemm.py whole and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
profile() {  # label, then ncu_gemm.py's arguments
  local label=$1; shift
  timeout 60 ncu --clock-control none --kernel-name regex:wgmma --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    python3 scripts/ncu_gemm.py --op wgmma_gemm "$@" > $OUT/ncu-$label.txt 2>&1
  echo "ncu $label rc=$?"
  grep -E "^  [a-z_]*wgmma|Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Memory Throughput|dram__bytes|Grid Size" \
    $OUT/ncu-$label.txt | head -9 | cut -c1-120
}
profile 70b-384-rule --M 384 --N 28672 --K 8192
profile 70b-384-stream --M 384 --N 28672 --K 8192 --aid wgmma_stream=2
profile q-256-rule --M 256 --N 4096 --K 2048
profile q-256-stream --M 256 --N 4096 --K 2048 --aid wgmma_stream=2
timeout 300 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests > $OUT/tests-gemm.log 2>&1
echo "gemm tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -8 | cut -c1-300
