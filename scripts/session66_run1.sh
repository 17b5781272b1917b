#!/usr/bin/env bash
# Session 66, run 1: the dense gated GEMV planned on its own kernel (the gated flag in the remembered plan's key; no
# per-launch shared-memory lookup): the gated op's and module's tests, memcheck on the gated cases, the op at M = 1 / 2
# against gemm + silu_and_mul and its host time per call against gemm_direct; and the warps per x-resident unit (the
# rule against 2) on large-N shapes of K <= 5120 at M = 1 and 4, k = 4 (session 64 left it for a sweep).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_nn_gated_mlp.py tests/test_opcheck.py \
  -k "gated or silu or Gated or plan" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 90 gated-gemv
timeout 60 python3 scripts/probe_gated_gemv.py --shapes 28672x4096,57344x8192,10240x2048 --dtypes fp16 \
  --json $OUT/probe-gated.json > $OUT/probe-gated.log 2>&1
echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-gated.log
timeout 60 python3 scripts/probe_gated_gemv.py --host --shapes 28672x4096,10240x2048,6144x1024 --ms 1,2 \
  --json $OUT/probe-gated-host.json > $OUT/probe-gated-host.log 2>&1
echo "host rc=$?"; grep "^| [0-9]" $OUT/probe-gated-host.log
timeout 300 python3 scripts/probe_gemv_launch.py \
  --shapes 16384x2048,24576x2048,32768x2048,65536x2048,151936x2048,28672x4096,57344x4096,128256x4096,152064x3584,151936x5120,28672x5120 \
  --ms 1,4 --settings "1,1:1:1:0:8:2" --reps 3 --out $OUT/unit-warps > $OUT/unit-warps.log 2>&1
echo "unit-warps rc=$?"; grep -E "^\|" $OUT/unit-warps.log | cut -c1-200
