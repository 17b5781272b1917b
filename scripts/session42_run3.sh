#!/usr/bin/env bash
# Session 42, device run 3 (run 2's build): every test file but test_cuda_gemm.py, and benchmarks/tests; kbit.gemm
# against cuBLAS fp16 at M = 192-4096 (k = 4, the benchmark's dense shapes but 70B).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
first="tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py tests/test_quality.py tests/test_reference.py
  tests/test_large_tensors.py tests/test_integration_transformers.py tests/test_dependent_launch.py tests/test_cuda_format.py"
files="$first $(ls tests/test_*.py | grep -v "test_cuda_gemm\.py" | grep -vF "$(echo $first | tr ' ' '\n')")"
timeout 380 python3 -m pytest $files benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,glm_shared_dn,llama8b_gu \
  --ms 192,256,384,512,768,1024,1536,2048,3072,4096 --ks 4 --out $R/gemm-large > $R/gemm-large.log 2>&1
echo "gemm-large rc=$?"
python3 scripts/ab_table.py s42=$R/gemm-large --path gemm > $OUT/gemm-large-table.md; cat $OUT/gemm-large-table.md
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
