#!/usr/bin/env bash
# Session 64, run 2 (after a call that carried kbit/_C.cta-router.so.xz to the warm machine): where the one-warp
# router kernel (this tree's build) beats the CTA-a-row one (main's), over the expert counts of real routers (8 to
# 384, top-2 / top-8), two rounds alternating; and the M = 1 / 4 GEMV's warps per x-resident unit (run 1: 2 warps a
# unit 48.8 us against the rule's 4, 52.4, on the lm_head shape 151936 x 2048) on the large and the Qwen3 shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
so=kbit/_C.cpython-312-x86_64-linux-gnu.so
cp $so /tmp/warp.so; xz -dc kbit/_C.cta-router.so.xz > /tmp/cta.so || exit 1
use_build() { cp /tmp/$1.so $so; echo "== build $1"; }
for r in 1-warp 2-cta 3-warp 4-cta; do
  use_build ${r#*-}
  timeout 60 python3 scripts/probe_router.py --experts 8,64,128,160,256,384 --topk 2,8,8,8,8,8 --tokens 1 \
    --json $OUT/probe-router-$r.json > $OUT/probe-router-$r.log 2>&1; echo "probe $r rc=$?"; grep "^| [0-9]" $OUT/probe-router-$r.log
done
use_build warp
timeout 300 python3 scripts/probe_gemv_launch.py --shapes 151936x2048,llama8b_gu,llama70b_gu,glm_shared_gu,gateup,Q,down,O \
  --ms 1,4 --settings "1,1:1:1:0:8:2,1:1:1:0:8:4,1:1:1:0:8:8" --reps 5 --out $OUT > $OUT/launch-unit-warps.log 2>&1
echo "launch rc=$?"; grep -E "^\|" $OUT/launch-unit-warps.log | cut -c1-220
tar -C "$OUT" -czf /tmp/session64_run2.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session64_run2.tgz "$OUT"/
