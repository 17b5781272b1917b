#!/usr/bin/env bash
# Session 37, device run 2 (x resident at one row for k = 4 only; k = 2's dense staged 16-slot GEMV without the
# block-ahead x load): kbit.gemm at k = 2 M = 16 on the Qwen3 / GLM / 8B shapes (run 1 had the spilling kernel), the
# M = 1 cells of run 1 at k = 2-5, the MoE sweep (grouped, 8 / 64 / 512 experts x 1 / 8 tokens, against fp16 bmm), then
# the GEMV, dispatch and reference tests of test_cuda_gemm and test_kernel_resources.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 90 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,O,Q,gateup,down,glm_shared_gu,llama8b_gu --ms 16 --ks 2,4 \
  --out $R/m16 > $R/m16.log 2>&1; echo "m16 rc=$?"
python3 scripts/ab_table.py s37=$R/m16 --path gemm | tail -14
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama70b_gu,llama8b_gu,glm_shared_gu,gateup --ms 1 --ks 2,3,4,5 \
  --out $R/m1 > $R/m1.log 2>&1; echo "m1 rc=$?"
python3 scripts/ab_table.py s37=$R/m1 --path gemm | tail -16
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -k "gemv or dispatch or reference" tests/test_kernel_resources.py \
  -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
