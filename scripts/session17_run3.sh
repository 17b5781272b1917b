#!/usr/bin/env bash
# Session 17, device run 3 (carried build: the wgmma kernel's stream-K): tests/test_cuda_gemm.py whole
# (the stream-K tests included), then the wgmma op's timings with stream-K off (the split layout) and
# on (the rule) in two processes on this machine (Llama-3 8B / 70B gate/up, M = 16-128; Qwen3
# gate/up and down, where the rule keeps the split layout); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r3; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
for mode in -1 0; do
  timeout 150 python3 -c "import sys, kbit; kbit._C._set_wgmma_stream_k($mode)
from benchmarks import ab_paths
ab_paths.main(['--ops', 'wgmma_gemm', '--shapes', 'llama8b_gu,llama70b_gu,gateup,down', '--ms', '16,32,64,128',
               '--ks', '4', '--out', '$R/ab-stream$mode'])" > $R/ab-stream$mode.log 2>&1
  echo "== stream-K mode $mode"; cat $R/ab-stream$mode/*.md | grep -E "^\||^##" | grep -v -- "---"
done
tar -czf $OUT/run3.tar.gz -C $R .
