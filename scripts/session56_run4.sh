#!/usr/bin/env bash
# Session 56, device run 4, on the final build (the fallback with PDL; the H200 table merged with run 3's sweeps):
# kbit.gemm against cuBLAS fp16 in the sustained regime (ab_paths --sustain 0.3) on eight of #7's shapes at M =
# 768-4096, k = 4; then tests/test_cuda_gemm.py whole, benchmarks/tests, test_dependent_launch.py, test_cuda_format.py.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --sustain 0.3 --ks 4 \
  --shapes Q,KV,O,down,gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 768,1024,1536,2048,3072,4096 \
  --out $OUT/gemm-sustained > $OUT/gemm-sustained.log 2>&1; echo "gemm rc=$?"
python3 scripts/ab_table.py "session56=$OUT/gemm-sustained" --path gemm > $OUT/gemm-sustained-table.md
cat $OUT/gemm-sustained-table.md | head -60
timeout 380 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests tests/test_dependent_launch.py \
  tests/test_cuda_format.py > $OUT/tests-gemm.log 2>&1
echo "tests rc=$?"; tail -2 $OUT/tests-gemm.log | cut -c1-200
