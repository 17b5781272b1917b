#!/usr/bin/env bash
# Session 49, device run 14 (right after run 13, on its warm machine): gemv_gemm under the rule, the final build without
# passes (ab_base/) against run 13's (ab_new/), alternating, three rounds each, k = 2 and 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op gemv_gemm --shapes llama70b_gu,llama8b_gu,gateup,glm_shared_gu --ms 4,5,8,12 --ks 2,4
