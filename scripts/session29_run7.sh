#!/usr/bin/env bash
# Session 29, device run 7 (carried build: main's, the H200 table of run 6): the numbers of record (kbit.gemm against
# cuBLAS fp16 in the same run: k = 4 at M = 1-32 on six shapes, k = 2, 3, 5 on 8B and 70B at M = 1-8); memcheck on the
# GEMV's unit-slot cases (x resident at 6-8 rows added); the GPU tests the change reaches.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu,Q,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
grep "^| 4 |" $R/gemm-k4/*.md | tr -s ' ' | head -40
timeout 80 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu --ms 1,2,4,8 --ks 2,3,5 \
  --out $R/gemm-ks > $R/gemm-ks.log 2>&1; echo "gemm-ks rc=$?"
grep "^| [235] |" $R/gemm-ks/*.md | tr -s ' ' | head -30
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-slots \
  > $R/sanitize_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize_memcheck.log | tail -2 | tr '\n' ' ')"
timeout 230 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py tests/test_nn.py tests/test_block.py \
  -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
