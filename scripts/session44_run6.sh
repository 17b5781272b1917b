#!/usr/bin/env bash
# Session 44, device run 6: the wgmma kernel with a plain loop over work clusters (128-token CTAs only; the shapes
# below M = 65 back to session 43's code): its descriptors in uniform registers again (runs 1-5's build took two R2UR
# a step). The wgmma tests; the rule against a cluster launched per cluster of work (probe --one-each, two
# alternating rounds) at M = 128-1024 on six shapes, against session 43's run 1 (before persistence) and this
# session's runs 1-2; the dispatch sweeps of run 3 again (fp16 M = 512-2048, bf16 384-1536, every k) with this kernel.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "wgmma" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 150 python3 scripts/probe_wgmma_configs.py --one-each --rounds 2 --splits "" \
  --shapes gateup,Q,glm_shared_gu,llama8b_gu,O,down --ms 128,256,384,512,768,1024 \
  --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "probe rc=$?"
grep -E "fp16|rule" $OUT/configs.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+), .grid_ctas.: ([0-9]+).*whole_units.: ([0-9]+)\}/t\1 rt\2 s\3 ctas \4 grid \5 whole \6/' | cut -c1-110
QWEN=gateup,Q,glm_shared_gu; LLAMA=llama8b_gu,llama70b_gu
FP16_MS=512,768,1024,1536,2048; BF16_MS=384,512,768,1024,1536
tune_sweep $R tune-qwen 60 --shapes $QWEN --ms $FP16_MS
tune_sweep $R tune-llama 60 --shapes $LLAMA --ms $FP16_MS
tune_sweep $R bf16-qwen 50 --dtype bfloat16 --shapes $QWEN --ms $BF16_MS
tune_sweep $R bf16-llama 50 --dtype bfloat16 --shapes $LLAMA --ms $BF16_MS
tar -czf $OUT/run${RUN:-6}-tune.tar.gz -C $R .
