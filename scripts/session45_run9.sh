#!/usr/bin/env bash
# Session 45, device run 9: wgmma units of fewer row tiles where one partial wave leaves SMs idle (WgmmaShape::
# unit_tiles; Llama-3 8B / 70B gate/up at M = 16-64 ran 112 CTAs on 132 SMs). The wgmma tests (the new unit-tiles test
# bitwise against units of the CTA's row tiles); compute-sanitizer memcheck and racecheck on the unit-tiles cases; the
# rule against units of the CTA's row tiles (--whole-tiles, two alternating rounds) at M = 16, 32, 64 next to cuBLAS.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "wgmma" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-unit-tiles > $OUT/$tool-wgmma-unit-tiles.log 2>&1
  echo "$tool rc=$?"; tail -2 $OUT/$tool-wgmma-unit-tiles.log | cut -c1-300
done
timeout 150 python3 scripts/probe_wgmma_configs.py --whole-tiles --rounds 2 --splits "" \
  --shapes llama8b_gu,llama70b_gu --ms 16,32,64 --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "configs rc=$?"
grep -E "fp16|rule" $OUT/configs.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .unit_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+).*/t\1 rt\2 ut\3 s\4 ctas \5/' | cut -c1-150
