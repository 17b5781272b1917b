#!/usr/bin/env bash
# Session 40, device run 4 (the final csrc: runs of 2 wherever they keep the critical path, no static first chunks in
# the scans): the x-shared tests; the MoE sweep (numbers of record); the GPU suite but test_cuda_gemm.py, the files
# session 39 did not run on its final build first (logs straight into $OUT; a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests-x.log 2>&1
echo "tests-x rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-x.log | head -12 | cut -c1-300
timeout 120 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
first="tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py tests/test_quality.py tests/test_reference.py
  tests/test_large_tensors.py tests/test_integration_transformers.py tests/test_dependent_launch.py tests/test_cuda_format.py"
files="$first $(ls tests/test_*.py | grep -v "test_cuda_gemm\.py" | grep -vF "$(echo $first | tr ' ' '\n')")"
timeout 420 python3 -m pytest $files benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
