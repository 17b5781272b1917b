#!/usr/bin/env bash
# Session 55, device run 2 (scripts/probe_power.py, sustained load, NVML clocks and power): kbit.gemm against cuBLAS
# fp16 on eight of #7's shapes at M = 256, 512, 1024; then, where the dispatch table takes dequantize + cuBLAS
# (M = 1536-4096), the wgmma kernel against that fallback and cuBLAS.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
cells=""
for s in Q KV O down gateup glm_shared_gu llama8b_gu llama70b_gu; do for m in 1024 512 256; do cells="$cells,$s:$m"; done; done
timeout 200 python3 scripts/probe_power.py --seconds 0.8 --cool 0.8 --rounds 1 --cells ${cells#,} \
  --out $OUT/power-gemm.json > $OUT/power-gemm.log 2>&1; echo "gemm rc=$?"
grep -v "^ \|Warning\|sync_debug\|^power limit" $OUT/power-gemm.log | cut -c1-150
cells=""
for s in Q gateup glm_shared_gu llama8b_gu llama70b_gu; do for m in 4096 2048 1536; do cells="$cells,$s:$m"; done; done
timeout 240 python3 scripts/probe_power.py --seconds 0.8 --cool 0.8 --rounds 1 --ops wgmma_gemm,dequant_cublas_gemm \
  --cells ${cells#,} --out $OUT/power-fallback.json > $OUT/power-fallback.log 2>&1; echo "fallback rc=$?"
grep -v "^ \|Warning\|sync_debug\|^power limit" $OUT/power-fallback.log | cut -c1-160
