#!/usr/bin/env bash
# Session 34, device run 3 (carried build: the image-threads aid takes 128 too): the wgmma op at the rule's shape and
# splits with the image pass in CTAs of 128 / 256 / 512 threads, its PDL by the rule at that size (scripts/
# probe_wgmma_configs.py --image-threads), eight shapes at M = 33-256, two rounds; the image-threads test.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -k "image_threads or reject_bad_values" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -2 $R/tests.log | cut -c1-300
for round in 1 2; do
  timeout 250 python3 scripts/probe_wgmma_configs.py --shapes Q,gateup,O,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 33,40,64,96,128,256 --row-tiles 0 --splits 0 --staging 0 --image-threads 128,256,512 \
    --out $R/threads-r$round.json > $R/threads-r$round.log 2>&1; echo "r$round rc=$?"
done
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
