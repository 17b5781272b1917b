#!/usr/bin/env bash
# Session 56, device run 2: the tiled dequantize's first-tile L2 prefetch before its PDL wait, by rule (single-round
# launches only), forced off and forced on, against PDL off: the PDL tests, then scripts/probe_dequant_cublas.py
# --pdl-ab 4 on five of #7's shapes at M = 768 and 2048, k = 4, fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_dependent_launch.py > $OUT/tests-pdl.log 2>&1; echo "tests pdl rc=$?"
tail -2 $OUT/tests-pdl.log | cut -c1-200
timeout 300 python3 scripts/probe_dequant_cublas.py --shapes llama8b_gu,Q,KV,down,glm_shared_gu \
  --ms 768,2048 --pdl-ab 4 --json $OUT/pdl-ab.json > $OUT/pdl-ab.log 2>&1; echo "pdl-ab rc=$?"
cat $OUT/pdl-ab.log | grep -v Warning | cut -c1-300
