#!/usr/bin/env bash
# Session 34, device run 1 (carried build: main + the plan's resident_clusters key): the wgmma op on the Qwen3
# shapes at M = 64-256 with two warpgroups (row tiles 8), splits 1-5, the image form, its pass launched with and
# without PDL (scripts/probe_wgmma_configs.py --pdl), next to the rule and cuBLAS fp16; the new plan test.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -k "resident_clusters or first_stage_alone_rule" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -2 $R/tests.log | cut -c1-300
timeout 400 python3 scripts/probe_wgmma_configs.py --shapes Q,gateup,O,down --ms 64,96,128,256 --row-tiles 8 \
  --splits 1,2,3,4,5 --staging 2 --pdl 1,2 --out $R/configs.json > $R/configs.log 2>&1; echo "configs rc=$?"
grep -E "rule|fp16" $R/configs.log | cut -c1-200
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
