#!/usr/bin/env bash
# Session 52, device run 2 (the build of run 1): the whole wgmma test set; 160 tokens forced against the rule where the
# rule's model rejected it (Llama-3 70B and 8B gate/up at M = 136-1024, the Qwen3 and GLM shapes at 160-800),
# alternating in one process; kbit.gemm against cuBLAS (fp16 and bf16) on the Llama-3 shapes at the Ms the rule
# moved and beside them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
bench() {  # NAME SHAPES MS
  timeout 150 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_tokens --diags 0,160 --shapes $2 --ms $3 \
    --rounds 3 --out $OUT/$1.json > $OUT/$1.log 2>&1; echo "$1 rc=$?"
  grep -v "^ \|Warning\|sync_debug" $OUT/$1.log | sed 's/ (1.000)//' | cut -c1-200
}
bench forced160-llama llama70b_gu,llama8b_gu 136,160,192,256,400,480,800,1024
bench forced160-qwen Q,O,down,gateup,glm_shared_gu,glm_shared_dn 160,320,480,640,800
gemm_records s52 llama8b_gu,llama70b_gu 128,136,160,192,272,320,384,512,640,768,1024
