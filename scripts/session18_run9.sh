#!/usr/bin/env bash
# Session 18, device run 9 (carried build: staged x with one `full` arrival per producer warp after a
# warp sync, instead of one per producer thread): x forced staged / image / the rule on Qwen3 and
# Llama shapes, then the wgmma tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r9; mkdir -p $R; start_device_run || exit 1
for mode in 1 2; do
  timeout 90 python3 -c "import sys, kbit; kbit._C._set_wgmma_x_staging($mode); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','gateup,down,KV,llama8b_gu,llama70b_gu','--ms','16,32,64,128','--ks','4','--out','$R/xmode-$mode']; ab_paths.main()" > $R/xmode-$mode.log 2>&1
  echo "== x staging mode $mode"; grep "k=4" $R/xmode-$mode.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
tar -czf $OUT/run9.tar.gz -C $R .
