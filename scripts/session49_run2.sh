#!/usr/bin/env bash
# Session 49, device run 2: the tiled dequantize split into parts (dequant_parts_log2): the format tests, then
# scripts/probe_dequant_parts.py (the dequantize alone and the fallback at M = 1536 / 2048, every parts setting).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_format.py -q -x > $OUT/tests-format.log 2>&1
echo "tests-format rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-format.log | head -8 | cut -c1-300
timeout 200 python3 scripts/probe_dequant_parts.py --shapes KV,Q,O,gateup,down,glm_shared_gu --ms 1536,2048 \
  --parts 0,1,2,4,8 --rounds 2 > $OUT/parts.log 2>&1; echo "parts rc=$?"
timeout 100 python3 scripts/probe_dequant_parts.py --shapes llama8b_gu --ms 2048 --parts 0,1,2 --rounds 1 \
  >> $OUT/parts.log 2>&1; echo "parts-8b rc=$?"
grep -v Warn $OUT/parts.log | grep -v "_cuda_set_sync" | cut -c1-400
