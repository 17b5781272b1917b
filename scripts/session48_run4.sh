#!/usr/bin/env bash
# Session 48, device run 4 (right after run 3, on its warm machine): run 2's A/B with run 3's build (the 8-slot image
# its own commit group again), main's build (ab_base/) against run 3's (ab_new/), alternating, three rounds each
# (gpu_build.sh's ab_alternate: $OUT/ab-all.json, ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op gemv_gemm --shapes gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,5,8,12,16
