#!/usr/bin/env bash
# Session 13, device run 1: the GEMV's mma decode at 5-16 rows (8 / 16 token slots): its tests, an
# A/B against the small-M, tile and wgmma kernels on the dense shapes, and the grouped sweep.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py -q -x -k "gemv" 2>&1 | tee $LOGS/tests.log | tail -3
timeout 180 python3 -m benchmarks.ab_paths --ops gemv_gemm:mma,mma_gemm,tile_gemm,wgmma_gemm \
  --shapes Q,KV,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,4,8,12,16 --ks 4 --out $LOGS/ab > $LOGS/ab.log 2>&1
grep "^|" $LOGS/ab/ab-*.md | head -60
timeout 120 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,16,64 --per-expert 1,4,8,16 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1
grep "^|" $LOGS/grouped/grouped-*.md | head -40
cp $LOGS/tests.log $LOGS/ab/ab-*.json $LOGS/ab/ab-*.md $LOGS/grouped/grouped-*.json $LOGS/grouped/grouped-*.md $OUT/ 2>/dev/null
