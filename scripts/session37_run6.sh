#!/usr/bin/env bash
# Session 37, device run 6 (x pair-transposed below 8 token slots: one LDS.128 a block instead of ldmatrix.x4):
# kbit.gemm at M = 1 and 4 for k = 2-5 on the eight shapes, the M = 16 control cells of run 2 (kernels this change
# leaves alone: the machine's speed against run 2's), the MoE sweep at 8 / 64 experts x 1 token, then the GEMV, split, dispatch and reference tests of
# test_cuda_gemm and test_kernel_resources.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4 --ks 2,3,4,5 --out $R/m14 > $R/m14.log 2>&1; echo "m14 rc=$?"
python3 scripts/ab_table.py s37=$R/m14 --path gemm > $R/m14-table.md; grep -c "|" $R/m14-table.md
timeout 90 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,O,Q,gateup,down,glm_shared_gu,llama8b_gu --ms 16 --ks 2,4 \
  --out $R/m16 > $R/m16.log 2>&1; echo "m16 rc=$?"
python3 scripts/ab_table.py s37=$R/m16 --path gemm | tail -14
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64 --sweep-ms 1 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -k "gemv or split or dispatch or reference" tests/test_kernel_resources.py \
  -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
