#!/usr/bin/env bash
# (Ran on 9f5e4fe's tree; the aid was reverted after it: with PDL within -3% / +5% at 1-2 groups but Qwen3 KV
# M = 256 -7%; passes without PDL mostly 3-63% slower; docs/design.md "Session 34".)
# Session 34, device run 5 (carried build: the image pass asks L2 for the GEMM's first weight groups before its wait, as
# a tuning aid, the rule none): the rule's plan with 0 / 1 / 2 / 4 groups of each (row tile, split) prefetched
# (scripts/probe_wgmma_configs.py --image-prefetch), eight shapes at M = 9-256, two rounds; the prefetch test.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -k "image_prefetch or image_threads or launch_plan" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -2 $R/tests.log | cut -c1-300
for round in 1 2; do
  timeout 200 python3 scripts/probe_wgmma_configs.py --shapes Q,gateup,O,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 9,16,32,40,64,128,256 --row-tiles 0 --splits 0 --staging 0 --image-prefetch 0,1,2,4 \
    --out $R/prefetch-r$round.json > $R/prefetch-r$round.log 2>&1; echo "r$round rc=$?"
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
