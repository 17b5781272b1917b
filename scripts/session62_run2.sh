#!/usr/bin/env bash
# Session 62, run 2: kbit::router_topk on the GPU. Its tests, opcheck and the Qwen3-MoE integration tests; the
# sanitizer cases plain, then compute-sanitizer memcheck and racecheck; the router probe (HF's softmax + topk +
# renormalisation against kbit.router_topk, alone and after the linear); the HF Qwen3-MoE model (bf16, compiled,
# graph, lm_head quantized) with every model's routers swapped for kbit.router_topk.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_integration_transformers.py \
  tests/test_opcheck.py -k "router or transformers or qwen or hf" > $OUT/tests-router.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests-router.log | tail -8 | cut -c1-300
python3 scripts/sanitize_cases.py cuda router 2>&1 | tail -2
SAN_TAIL=3 sanitize_run memcheck 90 router
SAN_TAIL=3 sanitize_run racecheck 90 router
timeout 90 python3 scripts/probe_router.py --experts 128,512 --topk 8,10 --tokens 1,4 --json $OUT/probe-router.json \
  > $OUT/probe-router.log 2>&1
echo "probe rc=$?"; grep "^|" $OUT/probe-router.log
timeout 280 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --kbit-routers --out $OUT/hf-routers > $OUT/hf-routers.log 2>&1
echo "hf rc=$?"; grep -E "tok/s|swapped" $OUT/hf-routers.log | grep -v "^|" | tail -6 | cut -c1-250
tar -C "$OUT" -czf /tmp/session62_run2.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session62_run2.tgz "$OUT"/
