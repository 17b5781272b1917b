#!/usr/bin/env bash
# Session 62, run 1: HEAD's build on the GPU. The tests session 61's mends touched and did not re-run there
# (test_kernel_resources, test_nn, test_moe_slots, test_bad_input, test_opcheck) plus the new slot-kernel and
# all-invalid-ids tests and the moved cuda_kernel_names helper's user; then kbit against cuBLAS fp16 and bf16 at
# M = 1 and 4 on the dense shapes in both dtypes (does the bf16 decode's extra conversion cost time?).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest -q -rs -p no:cacheprovider tests/test_moe_slots.py tests/test_kernel_resources.py \
  tests/test_nn.py tests/test_bad_input.py tests/test_opcheck.py tests/test_cuda_gemm.py::test_wgmma_stream_runs_its_kernel \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-300
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16,bf16 \
  --kernels kbit,fp16,bf16 --shapes gateup,down,Q,O,KV,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,4 \
  --out $OUT/dense-dtypes > $OUT/dense-dtypes.log 2>&1
echo "dense rc=$?"; tail -3 $OUT/dense-dtypes.log | cut -c1-300
tar -C "$OUT" -czf /tmp/session62_run1.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session62_run1.tgz "$OUT"/
