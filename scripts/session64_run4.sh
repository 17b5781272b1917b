#!/usr/bin/env bash
# Session 64, run 4: what kbit.fuse_projections saves on dense models' shapes (the M = 1 / 4 GEMV on Llama-3 8B's q,
# k / v and fused q/k/v, its gate or up and fused gate/up; Qwen3's were run 1's), and the GEMV's warps per x-resident
# unit on lm_head-like shapes (run 2: 2 warps a unit won only on 151936 x 2048): K = 2048 at 32768 / 65536 / 151936
# rows, K = 4096 at 128256 rows.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py --shapes 4096x4096,1024x4096,6144x4096,14336x4096,28672x4096 \
  --ms 1,4 --settings 1 --reps 5 --out $OUT/fuse > $OUT/launch-fuse.log 2>&1
echo "fuse rc=$?"; grep -E "^\|" $OUT/launch-fuse.log | cut -c1-200
timeout 200 python3 scripts/probe_gemv_launch.py --shapes 32768x2048,65536x2048,151936x2048,128256x4096 \
  --ms 1,4 --settings "1,1:1:1:0:8:2,1:1:1:0:8:4,1:1:1:0:8:8" --reps 5 --out $OUT/lm-head > $OUT/launch-lm-head.log 2>&1
echo "lm-head rc=$?"; grep -E "^\|" $OUT/launch-lm-head.log | cut -c1-200
tar -C "$OUT" -czf /tmp/session64_run4.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session64_run4.tgz "$OUT"/
