#!/usr/bin/env bash
# Session 64, run 3: kbit::router_topk with both kernels (one warp a row to 256 experts, one CTA a row to 1024) and
# kbit.nn.fuse_projections. Tests (router, fused projections, opcheck, the HF integration and the HF benchmark's
# CPU-sized tests), the router's sanitizer cases under memcheck / racecheck, the router probe across the kernels'
# border, and the HF Qwen3-MoE decode (bf16, k = 4, lm_head quantized, compiled, graph, kbit routers) with and without
# the q/k/v projections fused, at 512 experts top-10 and 128 experts top-8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_nn_fused.py \
  tests/test_integration_transformers.py benchmarks/tests/test_hf_model.py tests/test_opcheck.py \
  -k "router or fuse or Fused or transformers or qwen or hf or tiny" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 60 router
SAN_TAIL=2 sanitize_run racecheck 60 router
timeout 60 python3 scripts/probe_router.py --experts 8,64,128,256,257,384,512 --topk 2,8,8,8,8,8,10 --tokens 1,4 \
  --json $OUT/probe-router.json > $OUT/probe-router.log 2>&1; echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-router.log
for cfg in "e512:" "e128:--experts 128 --top-k 8"; do
  name=${cfg%%:*}
  timeout 200 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
    --kbit-routers --fuse-projections ${cfg#*:} --out $OUT/hf-$name > $OUT/hf-$name.log 2>&1
  echo "hf $name rc=$?"; grep -E "^\| (bf16|kbit k=4[a-z ]*) \| [0-9]" $OUT/hf-$name/hf_model.md | cut -c1-120
  grep -o "router_topk[a-z_]*kernel[^;]*;" $OUT/hf-$name/hf_model.md | head -3
done
tar -C "$OUT" -czf /tmp/session64_run3.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session64_run3.tgz "$OUT"/
