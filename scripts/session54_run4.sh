#!/usr/bin/env bash
# Session 54, device run 4: stream-K over every CTA with its pieces loaded 8 float4 a thread at once (run 3 loaded
# them one at a time: ~16 dependent L2 round trips a piece at 128 tokens, 1.1-4x the rule's time). The stream and plan
# tests, compute-sanitizer on the stream cases, then the rule against stream-K (kbit._C._set_wgmma_stream(2)) on #7's
# cells, k = 4 fp16, alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "stream or remembered or aids" > $OUT/tests-stream.log 2>&1
echo "stream tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-stream.log | head -8 | cut -c1-300
sanitize_run memcheck 60 wgmma-stream
sanitize_run racecheck 120 wgmma-stream
timeout 260 python3 scripts/probe_wgmma_aid_sets.py --shapes llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu \
  --ms 192,256,272,384,512,768,1024 --rounds 3 --configs "rule:;stream:wgmma_stream=2" \
  --out $OUT/stream-bench.json > $OUT/stream-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/stream-bench.log | cut -c1-90
