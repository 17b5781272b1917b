#!/usr/bin/env bash
# Session 49, device run 8 (right after run 7, on its warm machine): does the bulk-copy y tile gain on the Llama-3
# sizes (run 4: 8B gate/up M = 128 / 256 -9%) while it lost on Qwen3 Q and GLM shared gate/up? The wgmma op under the
# rule, the final build (ab_base/) against run 7's (ab_new/), alternating, three rounds each.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op wgmma_gemm --shapes llama8b_gu,llama70b_gu,Q,glm_shared_gu --ms 64,128,256,512
