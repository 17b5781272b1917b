#!/usr/bin/env bash
# Session 51, device run 3, on b7457ec's build (wgmma CTAs of 80-128 tokens, the balanced rule): the wgmma tests,
# compute-sanitizer (memcheck and racecheck on the persistent cases, now 80 / 112 / 128 tokens; memcheck on the split
# cases), then the dispatch sweeps where the wgmma kernel's plans changed: fp16 at M = 96, 192, 256, 384, 512 and bf16
# at 192-512, every k, the nine table shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r3; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
sanitize_run memcheck 100 wgmma-persistent
sanitize_run racecheck 150 wgmma-persistent
sanitize_run memcheck 120 wgmma-splits
tune_sweep $R tune 150 --ms 96,192,256,384,512
tune_sweep $R bf16 120 --dtype bfloat16 --ms 192,256,384,512
tar -czf $OUT/run3-tune.tar.gz -C $R .
