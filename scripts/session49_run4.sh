#!/usr/bin/env bash
# Session 49, device run 4 (right after run 3, on its warm machine): the wgmma op under the rule, the base build
# (ab_base/: 94a6dcd's csrc, the consumers' 16-byte stores of y's tile) against run 3's (ab_new/: bulk copies),
# alternating, three rounds each (gpu_build.sh's ab_alternate: $OUT/ab-all.json, ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op wgmma_gemm --shapes Q,gateup,down,glm_shared_gu,llama8b_gu --ms 128,256,512,1024,2048
