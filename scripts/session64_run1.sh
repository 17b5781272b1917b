#!/usr/bin/env bash
# Session 64, run 1 (written in session 63, which was cut off before it ran): kbit::router_topk's one-warp-a-row
# kernel (this tree; built in session 62, never run) against
# main's CTA-a-row kernel (carried as kbit/_C.cta-router.so.xz: the same csrc but router_topk.cu). On the one-warp
# build: the router, transformers-integration and opcheck tests (also session 62's unrun review mends), the sanitizer
# cases plain and under memcheck / racecheck. Then both builds alternating in one machine: the probe, and the HF
# Qwen3-MoE decode with kbit routers; and the M = 1 GEMV's launch forms on the lm_head shape (151936 x 2048); the
# M = 1 GEMV on the HF model's q, k/v and fused q/k/v shapes (what fusing the three projections would save).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
so=kbit/_C.cpython-312-x86_64-linux-gnu.so
cp $so /tmp/warp.so; xz -dc kbit/_C.cta-router.so.xz > /tmp/cta.so
use_build() { cp /tmp/$1.so $so; echo "== build $1"; }
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_integration_transformers.py \
  tests/test_opcheck.py -k "router or transformers or qwen or hf" > $OUT/tests-router-warp.log 2>&1
rc=$?; echo "tests (warp) rc=$rc"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests-router-warp.log | tail -8 | cut -c1-300
if [ $rc != 0 ]; then
  use_build cta
  timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_integration_transformers.py \
    tests/test_opcheck.py -k "router or transformers or qwen or hf" > $OUT/tests-router-cta.log 2>&1
  echo "tests (cta) rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests-router-cta.log | tail -8 | cut -c1-300
  use_build warp
fi
python3 scripts/sanitize_cases.py cuda router 2>&1 | tail -2
SAN_TAIL=2 sanitize_run memcheck 60 router
SAN_TAIL=2 sanitize_run racecheck 60 router
for r in 1-warp 2-cta 3-warp 4-cta; do
  use_build ${r#*-}
  timeout 60 python3 scripts/probe_router.py --experts 128,512 --topk 8,10 --tokens 1,4 --json $OUT/probe-router-$r.json \
    > $OUT/probe-router-$r.log 2>&1; echo "probe $r rc=$?"; grep "^| [0-9]" $OUT/probe-router-$r.log
done
for b in warp cta; do
  use_build $b
  timeout 170 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
    --kbit-routers --out $OUT/hf-$b > $OUT/hf-$b.log 2>&1
  echo "hf $b rc=$?"; grep -E "^\| (bf16|kbit k=4) \| [0-9]" $OUT/hf-$b/hf_model.md | cut -c1-120
  grep -o "router_topk_kernel[^;]*;" $OUT/hf-$b/hf_model.md | head -2
done
use_build warp
S="1,1:1:1:0:8:2,1:1:1:0:8:4,1:1:1:0:8:8,1:1:2:2,1:1:2:3,1:1:2:4,1:1:1:0:8:0:-1:1:1:3,1:1:1:0:8:0:-1:1:1:4"
S="$S,1:1:1:0:8:0:-1:1:2,1:1:1:0:8:0:2"
timeout 150 python3 scripts/probe_gemv_launch.py --shapes 151936x2048 --ms 1 --settings "$S" --reps 3 --out $OUT \
  > $OUT/launch-lm-head.log 2>&1; echo "launch rc=$?"; grep -E "^\|" $OUT/launch-lm-head.log | cut -c1-250
timeout 90 python3 scripts/probe_gemv_launch.py --shapes 5120x2048,4096x2048,512x2048,2048x4096 --ms 1 --settings 1 \
  --reps 5 --out $OUT/qkv > $OUT/launch-qkv.log 2>&1; echo "qkv rc=$?"; grep -E "^\|" $OUT/launch-qkv.log | cut -c1-200
tar -C "$OUT" -czf /tmp/session64_run1.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session64_run1.tgz "$OUT"/
