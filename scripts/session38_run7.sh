#!/usr/bin/env bash
# Session 38, device run 7 (main's final csrc: x shared as its own kernel instantiation): the MoE sweep (k = 4, against
# fp16 bmm; 8 x 8 regressed 7-10% in run 6 with the runtime flag), racecheck on the x-shared cases, then the GPU
# suite: every test file and benchmarks/tests. Logs straight into $OUT (a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
  > $R/racecheck-shared-x.log 2>&1; echo "racecheck shared-x rc=$?"; tail -1 $R/racecheck-shared-x.log | cut -c1-200
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_cuda_format.py -q > $R/tests-a.log 2>&1
echo "tests-a rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests-a.log | head -12 | cut -c1-300
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn|cuda_format|kernel_resources)\.py")
timeout 230 python3 -m pytest $files benchmarks/tests -q > $R/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests-b.log | head -12 | cut -c1-300
