#!/usr/bin/env bash
# Session 34, device run 4 (carried build: the image pass in CTAs of 512 threads where only those fit next to the GEMM's,
# for PDL; the 0/1/2 aids through one helper): the rule against the pass forced to 256 (the rule before), eight shapes at
# M = 33-256, two rounds (scripts/probe_wgmma_configs.py --image-threads 0,256); kbit.gemm against cuBLAS fp16 (k = 4,
# eight shapes, M = 1-256); the wgmma and dependent-launch tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
for round in 1 2; do
  timeout 150 python3 scripts/probe_wgmma_configs.py --shapes Q,gateup,O,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 33,40,64,96,128,192,256 --row-tiles 0 --splits 0 --staging 0 --image-threads 0,256 \
    --out $R/ab-r$round.json > $R/ab-r$round.log 2>&1; echo "ab r$round rc=$?"
done
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32,40,48,64,96,128,256 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py main=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q -k "wgmma or image or dependent" \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
