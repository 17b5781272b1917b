#!/usr/bin/env bash
# Session 48, device run 2 (right after run 1, on its warm machine): the A/B of the x image in the first item's commit
# group, main's build (ab_base/, carried) against run 1's (ab_new/, left by run 1), alternating, three rounds each
# (gpu_build.sh's ab_alternate: $OUT/ab-all.json, ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op gemv_gemm --shapes gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,5,8,12,16
