#!/usr/bin/env bash
# Session 48, device run 6 (right after run 5, on its warm machine): the A/B of the 8-slot kernel's stepped items, run
# 3's build (ab_base/, carried) against run 5's (ab_new/), alternating, three rounds each, at k = 2 and 4 (gpu_build.sh's
# ab_alternate: $OUT/ab-all.json, ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op gemv_gemm --shapes gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,5,8,16 --ks 2,4
