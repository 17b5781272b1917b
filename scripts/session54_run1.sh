#!/usr/bin/env bash
# Session 54, device run 1: the wgmma kernel's stream-K schedule (forced by kbit._C._set_wgmma_stream; the rule does
# not take it yet). The stream tests and the plan tests, compute-sanitizer memcheck / racecheck / synccheck on the
# stream cases, then the rule against stream-K in clusters of 2, 4 and 8 on #7's cells (k = 4 fp16, cold L2,
# alternating in one process).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "stream or remembered or aids" > $OUT/tests-stream.log 2>&1
echo "stream tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-stream.log | head -8 | cut -c1-300
sanitize_run memcheck 60 wgmma-stream
sanitize_run racecheck 120 wgmma-stream
sanitize_run synccheck 60 wgmma-stream
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu
MS=192,256,272,512,768,1024
timeout 260 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_stream --diags 0,4,2,8 --shapes $SH \
  --ms $MS --rounds 2 --out $OUT/stream-bench.json > $OUT/stream-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/stream-bench.log | sed 's/ (1.000)//' | cut -c1-200
