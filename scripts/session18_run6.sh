#!/usr/bin/env bash
# Session 18, device run 6 (carried build: the staged x loaded coalesced — a warp reads 8 tokens'
# 64-byte blocks per load and transposes with shuffles): x staged vs the image pass forced on the
# Qwen3 and Llama shapes (M = 16-128), the rule, then the wgmma tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r6; mkdir -p $R; start_device_run || exit 1
for rep in 1 2; do
for mode in 1 2 0; do
  timeout 90 python3 -c "import sys, kbit; kbit._C._set_wgmma_x_staging($mode); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','gateup,down,Q,O,KV,llama8b_gu,llama70b_gu','--ms','16,32,64,128','--ks','4','--out','$R/xmode-$mode-$rep']; ab_paths.main()" > $R/xmode-$mode-$rep.log 2>&1
  echo "== x staging mode $mode ($rep)"; grep "k=4" $R/xmode-$mode-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
tar -czf $OUT/run6.tar.gz -C $R .
