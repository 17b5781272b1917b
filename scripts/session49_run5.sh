#!/usr/bin/env bash
# Session 49, device run 5, on a build of main's csrc patched by scripts/wgmma_trace_patch.py (a diagnostic build):
# where the wgmma kernel's time goes at prefill M. Per-CTA traces (scripts/probe_wgmma_trace.py, one unit a CTA) on
# Qwen3 Q, gate/up and Llama-3 8B gate/up at M = 256-1024; Nsight Compute (speed of light, memory and compute
# workload) on one wgmma_gemm call and one cuBLAS call of Qwen3 Q at M = 1024 and gate/up at M = 512.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 scripts/probe_wgmma_trace.py --shapes Q,gateup,llama8b_gu --ms 256,512,1024 \
  --out $OUT/trace.json > $OUT/trace.log 2>&1; echo "trace rc=$?"
for cell in "Q 1024 4096 2048" "gateup 512 5120 2048"; do
  set -- $cell
  timeout 90 ncu --clock-control none --kernel-name regex:wgmma_gemm --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section Occupancy \
    python3 scripts/ncu_gemm.py --op wgmma_gemm --M $2 --N $3 --K $4 > $OUT/ncu-wgmma-$1-$2.txt 2>&1
  echo "ncu wgmma $1 $2 rc=$?"
  timeout 90 ncu --clock-control none --kernel-name regex:'gemm|sm90|xmma|cutlass' --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section Occupancy \
    python3 scripts/ncu_cublas.py --M $2 --N $3 --K $4 > $OUT/ncu-cublas-$1-$2.txt 2>&1
  echo "ncu cublas $1 $2 rc=$?"
done
grep -v "^ *group[0-9]" $OUT/trace.log | cut -c1-300 | head -80
for f in $OUT/ncu-*.txt; do echo "== $f"; grep -E "^  [a-z_0-9]+.*\(|Duration|Throughput|Tensor|Hit Rate|Busy|Issue Slots|Achieved Occ" $f | head -30; done
