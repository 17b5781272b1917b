#!/usr/bin/env bash
# Session 34, device run 7 (carried build: the final csrc, after the review's mends: 512 threads only where PDL is
# possible, the pass's launch bounds): test_cuda_gemm, test_dependent_launch, test_nn (the wgmma paths and every
# dispatcher path), then the rule against the pass forced to 256 on the cells it changes (one round).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 420 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py tests/test_nn.py -q \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
timeout 60 python3 scripts/probe_wgmma_configs.py --shapes O,down,gateup,llama8b_gu --ms 40,96,128,256 --row-tiles 0 \
  --splits 0 --staging 0 --image-threads 256 --out $R/ab.json > $R/ab.log 2>&1; echo "ab rc=$?"
grep -E "rule|t256" $R/ab.log | sed -E "s/plan \{.*'image_pdl': ([A-Za-z]+).*'image_threads': ([0-9]+).*/pdl=\1 t\2/" | cut -c1-120
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
