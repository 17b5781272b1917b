#!/usr/bin/env bash
# Session 45, device run 5: the t-major x slot at one token (x staged, mma decode: one LDS.128 a block for x where
# ldmatrix.x4 took 4 wavefronts). The GEMV tests (dense and grouped); the M = 1 slope probe (against run 1's) and the
# launch probe's rule at M = 1 on seven shapes (against runs 2-3); the MoE decode at 1 row a expert.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv or grouped" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 120 python3 scripts/probe_gemv_slope.py --ks 4096,8192 --ns 2048,7168,14336,28672,57344 --out $OUT \
  > $OUT/slope.log 2>&1; echo "slope rc=$?"; grep -E "^\||intercept" $OUT/slope.log | cut -c1-200
timeout 120 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down,O,KV --ms 1 \
  --settings "1,1:1:0" --reps 3 --out $OUT > $OUT/launch.log 2>&1; echo "launch rc=$?"; grep -E "^\|" $OUT/launch.log | cut -c1-200
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1 --out $OUT/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $OUT/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
