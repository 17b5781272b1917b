#!/usr/bin/env bash
# Session 12, device run 3: the L2 prefetch before the PDL wait (64 KB / 8 KB / none vs PDL off,
# in one process), the host cost with the slimmer kbit.gemm, and the grouped sweep with PDL on
# (the grouped GEMV vs the small-M kernel both got it).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_dependent_launch.py -q -x 2>&1 | tail -2
timeout 200 python3 -m benchmarks.bench_pdl --shapes KV,Q,gateup,down,llama8b_gu,llama70b_gu --ms 1,4 \
  --prefetch 65536,8192,0 --out $LOGS/pdl > $LOGS/pdl.log 2>&1; grep " M=" $LOGS/pdl.log
timeout 60 python3 -m benchmarks.bench_pdl --op mma_gemm --shapes gateup,llama8b_gu --ms 8 --reps 2 \
  --prefetch 65536,0 --out $LOGS/pdl_mma > $LOGS/pdl_mma.log 2>&1; grep " M=" $LOGS/pdl_mma.log
timeout 100 python3 -m benchmarks.bench_dispatch --out $LOGS/host > $LOGS/host.log 2>&1; grep "M=  1" $LOGS/host.log
timeout 120 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,16,64 --per-expert 1,2,4 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1; grep "E=" $LOGS/grouped.log
cp $LOGS/pdl/pdl-*.json $OUT/pdl-prefetch.json; cp $LOGS/pdl_mma/pdl-*.json $OUT/pdl-prefetch-mma.json
cp $LOGS/host/dispatch.json $OUT/host-cost.json; cp $LOGS/grouped/*.json $LOGS/grouped/*.md $OUT/ 2>/dev/null
