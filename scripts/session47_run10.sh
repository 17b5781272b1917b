#!/usr/bin/env bash
# Session 47, device run 10 (right after run 9, on its warm machine): the A/B of the x-resident GEMV's late PDL wait,
# run 6's build (ab_base/, carried) against run 9's (ab_new/, left by run 9), alternating, three rounds each (gpu_build.sh's
# ab_alternate, factored out of this script after the run with the same commands and files: $OUT/ab-all.json,
# ab-all.log, ab.md).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export OUT=${OUT:-out} PYTHONUNBUFFERED=1
ab_alternate 3 --op gemv_gemm --shapes gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,4,8,16
