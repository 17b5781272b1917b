#!/usr/bin/env bash
# Session 65, run 5 (the final tree: run 4's device code; the review's mends in the module layer, the gemm ops' direct
# bindings as one template, a launcher branch's error): the gated op's and module's tests, fused projections, and
# kbit.nn's and opcheck's Linear / silu cases (the device time left: ~390 s).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 170 python3 -m pytest -q -rs -p no:cacheprovider tests/test_nn_gated_mlp.py tests/test_nn_fused.py \
  tests/test_nn.py tests/test_opcheck.py -k "gated or Gated or silu or fuse or Fused or linear or Linear" \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
