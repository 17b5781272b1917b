#!/usr/bin/env bash
# Session 52, device run 9, on the final build: the fitted rule against session 51's with bf16 activations (run 4 was
# fp16), alternating in one process; the host cost per call of gemm at M = 160-640 on Llama-3 8B / Qwen3 Q sizes, with
# and without the 160-token candidate (benchmarks.bench_dispatch --shapes).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 128,0 --dtype bfloat16 \
  --shapes llama8b_gu,llama70b_gu,Q,O,gateup,glm_shared_dn --ms 160,320,480,640,800 --rounds 3 \
  --out $OUT/max-tokens-bf16.json > $OUT/max-tokens-bf16.log 2>&1; echo "bf16 rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/max-tokens-bf16.log | sed 's/ (1.000)//' | cut -c1-200
timeout 150 python3 -m benchmarks.bench_dispatch --shapes "160,4096,14336;320,4096,14336;640,2048,4096;160,2048,4096" \
  --reps 15 --out $OUT/dispatch > $OUT/dispatch.log 2>&1; echo "dispatch rc=$?"
grep "gemm_direct\|F.linear" $OUT/dispatch.log | cut -c1-150
