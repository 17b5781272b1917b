#!/usr/bin/env bash
# Session 51, device run 1: the wgmma kernel's 96-token CTA shape (chunks of 96 where as few of them as of 128 hold M).
# A quick correctness pass on the token-chunk and any-M wgmma tests, then the op under the tuning aid's 128 and 96
# alternating in one process (k = 4, fp16, cold L2, graph replays) at M = 80-512 on seven shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma_forced_token or (any_m and wgmma)" \
  > $OUT/tests-quick.log 2>&1
echo "quick tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-quick.log | head -8 | cut -c1-300
timeout 420 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_tokens --diags 128,96 \
  --shapes Q,O,down,gateup,KV,glm_shared_gu,llama8b_gu --ms 80,96,160,192,288,384,512 --rounds 3 \
  --out $OUT/tokens-bench.json 2>&1 | tee $OUT/tokens-bench.log | grep -v "^ \|Warning\|sync_debug"
