#!/usr/bin/env bash
# Session 54, device run 3: stream-K over every CTA (a CTA per SM; a unit's pieces counted on its counter, the last
# adds them; run 2: clusters of 3-8 CTAs leave 12-15 of the H200's 132 SMs idle, and clusters of 2 balance no better
# than whole units). The stream and plan tests, compute-sanitizer on the stream cases, then the rule against stream-K
# (kbit._C._set_wgmma_stream(2)) on #7's cells, k = 4 fp16, alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "stream or remembered or aids" > $OUT/tests-stream.log 2>&1
echo "stream tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-stream.log | head -8 | cut -c1-300
sanitize_run memcheck 60 wgmma-stream
sanitize_run racecheck 120 wgmma-stream
sanitize_run synccheck 60 wgmma-stream
timeout 260 python3 scripts/probe_wgmma_aid_sets.py --shapes llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu \
  --ms 192,256,272,384,512,768,1024 --rounds 3 --configs "rule:;stream:wgmma_stream=2" \
  --out $OUT/stream-bench.json > $OUT/stream-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/stream-bench.log | cut -c1-160
