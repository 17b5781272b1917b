#!/usr/bin/env bash
# Session 54, device run 8, the final build: kbit.gemm against cuBLAS fp16 on #7's shapes at M = 136-1024 (k = 4,
# fp16; session 53 took none on its final build, whose kernels and rule these are).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,down,gateup,KV,llama8b_gu,llama70b_gu,glm_shared_gu \
  --ms 136,256,272,512,768,1024 --ks 4 --dtype float16 --out $OUT/gemm-float16 > $OUT/gemm-float16.log 2>&1
echo "gemm rc=$?"
python3 scripts/ab_table.py "session54=$OUT/gemm-float16" --path gemm > $OUT/gemm-float16-table.md
head -70 $OUT/gemm-float16-table.md | cut -c1-160
