#!/usr/bin/env bash
# Session 64, run 6: the review's mends on the GPU. router_topk's new cases (the one-warp kernel's keys-a-lane borders,
# NaN / -0.0 / infinities in the CTA kernel) in its tests and under compute-sanitizer; fuse_projections' (input changed
# in place, another thread, copies keep nothing, skip, more declines) and the HF tests (a fresh model of other weights).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_nn_fused.py \
  tests/test_integration_transformers.py tests/test_opcheck.py benchmarks/tests/test_hf_model.py > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 60 router
SAN_TAIL=2 sanitize_run racecheck 60 router
