#!/usr/bin/env bash
# Session 50, device run 9 (right after run 8, on its warm machine): the wgmma op under the rule, main's build
# (ab_base/) against run 8's (ab_new/: the weight tiles' own barriers, copied after the previous group's x),
# alternating, three rounds each (gpu_build.sh's ab_alternate: $OUT/ab-all.json, ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op wgmma_gemm --shapes Q,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu --ms 16,64,128,256,512,1024,2048
