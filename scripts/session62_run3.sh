#!/usr/bin/env bash
# Session 62, run 3 (after run 2's two test failures were mended: the ATen form's -0.0 in CUDA's radix sort, the swap
# check's fp32 tolerance): the router and integration tests again; the HF Qwen3-MoE model with HF's own routers on
# this build (run 2's counterpart); then tests/test_cuda_gemm.py and benchmarks/tests (the GEMV launch's merged blocks).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_integration_transformers.py \
  tests/test_opcheck.py -k "router or transformers or qwen or hf" > $OUT/tests-router.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests-router.log | tail -8 | cut -c1-300
timeout 200 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --out $OUT/hf-default > $OUT/hf-default.log 2>&1
echo "hf rc=$?"; grep -E "tok/s" $OUT/hf-default.log | grep -v "^|" | tail -3 | cut -c1-200
timeout 330 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q --maxfail=20 -rs -p no:cacheprovider \
  > $OUT/suite-a.log 2>&1
echo "suite a rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/suite-a.log | tail -8 | cut -c1-300
tar -C "$OUT" -czf /tmp/session62_run3.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session62_run3.tgz "$OUT"/
