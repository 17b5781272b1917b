#!/usr/bin/env bash
# Session 65, run 4 (the final kernels: the dense gated GEMV at one token slot, x staged or resident; M = 2 the two
# ops): the gated op's and module's tests, the grouped gated paths (whose launch rule now names grouped and dense
# apart), memcheck on the gated and by-slot cases, the op at M = 1, 2 against gemm + silu_and_mul.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_nn_gated_mlp.py tests/test_moe_slots.py \
  tests/test_moe_ops.py tests/test_opcheck.py -k "gated or silu or Gated or slot" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 90 gated-gemv
SAN_TAIL=2 sanitize_run memcheck 90 moe-slots
timeout 60 python3 scripts/probe_gated_gemv.py --shapes 28672x4096,57344x8192,10240x2048 --dtypes fp16 \
  --json $OUT/probe-gated.json > $OUT/probe-gated.log 2>&1
echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-gated.log
