#!/usr/bin/env bash
# Session 34, device run 2 (carried build: the image pass's threads a CTA as a tuning aid): the wgmma op at the rule's
# shape and splits with the image pass launched with / without PDL, in CTAs of 256 / 512 / 1024 threads
# (scripts/probe_wgmma_configs.py --pdl --image-threads), Qwen3 Q, gate/up, O, down at M = 64-256, Llama-3 8B and GLM
# shared gate/up at M = 96-256; the image-threads and plan tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -k "image_threads or launch_plan or wgmma_gemm_graph or reject_bad_values" \
  > $R/tests.log 2>&1; echo "tests rc=$?"; tail -2 $R/tests.log | cut -c1-300
for round in 1 2; do
  timeout 200 python3 scripts/probe_wgmma_configs.py --shapes Q,gateup,O,down --ms 64,96,128,256 --row-tiles 0 --splits 0 \
    --staging 0 --pdl 1,2 --image-threads 256,512,1024 --out $R/threads-qwen3-r$round.json > $R/threads-qwen3-r$round.log 2>&1
  echo "qwen3 r$round rc=$?"
  timeout 120 python3 scripts/probe_wgmma_configs.py --shapes llama8b_gu,glm_shared_gu --ms 96,128,256 --row-tiles 0 \
    --splits 0 --staging 0 --pdl 1,2 --image-threads 256,512,1024 --out $R/threads-big-r$round.json \
    > $R/threads-big-r$round.log 2>&1; echo "big r$round rc=$?"
done
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
