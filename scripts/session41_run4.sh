#!/usr/bin/env bash
# Session 41, device run 4 (the final csrc): the halving rule's last step at one row (Qwen3 MoE gate/up, 40-64 experts
# x 1 row: the rule keeps 2 warps per unit under 2112 units) against one warp per unit forced, k = 4 and 2; every test
# file but test_cuda_gemm.py (run 3), and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
for k in 4 2; do
  timeout 80 python3 scripts/probe_grouped_schedule.py --k $k --shapes moe_gu --experts 40,48,56,64 --per-expert 1 \
    --settings 2:1,2:1:8:1 --reps 3 --out $R/w1-k$k > $OUT/probe-w1-k$k.log 2>&1
  echo "probe w1-k$k rc=$?"; grep "^| " $OUT/probe-w1-k$k.log
done
first="tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py tests/test_quality.py tests/test_reference.py
  tests/test_large_tensors.py tests/test_integration_transformers.py tests/test_dependent_launch.py tests/test_cuda_format.py"
files="$first $(ls tests/test_*.py | grep -v "test_cuda_gemm\.py" | grep -vF "$(echo $first | tr ' ' '\n')")"
timeout 420 python3 -m pytest $files benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
