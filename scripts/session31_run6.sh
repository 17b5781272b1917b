#!/usr/bin/env bash
# Session 31, device run 6 (carried build: 190ce8b, the x-staging rule): two against four warpgroups at M = 33-64 under
# the new rule (row tiles forced 8 / 16, the model's splits, the rule's staging) on Llama-3 8B, GLM shared and Qwen3
# gate/up (both shapes the same CTA count) and GLM shared and Qwen3 down (four fewer); then the ops at M = 16-128 on the
# Qwen3 shapes (kbit.gemm and wgmma_gemm against cuBLAS fp16).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_wgmma_configs.py --shapes llama8b_gu,glm_shared_gu,glm_shared_dn,gateup,down --ms 33,48,64 \
  --row-tiles 8,16 --splits 0 --staging 0 --out $R/shapes.json > $R/shapes.log 2>&1; echo "shapes rc=$?"
grep -E "rule|rt" $R/shapes.log | sed 's/plan {.tokens.: 64, //; s/, .image_pdl.*//' | cut -c1-110
timeout 150 python3 -m benchmarks.ab_paths --ops gemm,wgmma_gemm --shapes Q,O,gateup,down,KV --ms 16,24,32,40,48,64,96,128 \
  --ks 4 --out $R/ab > $R/ab.log 2>&1; echo "ab rc=$?"
python3 scripts/ab_table.py new=$R/ab --path gemm | tee $R/ab-gemm.md
python3 scripts/ab_table.py new=$R/ab --path wgmma_gemm | tee $R/ab-wgmma.md
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
