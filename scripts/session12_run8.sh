#!/usr/bin/env bash
# Session 12, device run 8: the review follow-ups (PDL only where the kernel's code has the wait,
# the GIL released in gemm_direct, KBIT_PDL read first, a kbit -> kbit chain with nothing in
# between): the PDL tests, the API / nn / graph / stream tests, the host cost.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_dependent_launch.py -q --maxfail=5 2>&1 | tee $OUT/tests-pdl.log | tail -2
timeout 200 python3 -m pytest tests/test_api.py tests/test_nn.py tests/test_bad_input.py tests/test_opcheck.py tests/test_block.py \
  tests/test_cuda_gemm.py -q --maxfail=10 -k "not test_cuda_gemm or graph or stream or dispatch or deterministic" 2>&1 \
  | tee $OUT/tests-api.log | tail -2
timeout 100 python3 -m benchmarks.bench_dispatch --out $LOGS/host > $LOGS/host.log 2>&1; grep "M=  1" $LOGS/host.log
cp $LOGS/host/dispatch.json $OUT/host-cost.json
