#!/usr/bin/env bash
# Session 58, device runs 9-10 (the final build: moe_route_gather, grouped_gemm_silu_and_mul with the gated epilogue in
# the 1-2-slot grouped GEMV kernels, silu_and_mul's interleaved mode). PART=a: test_cuda_gemm.py and benchmarks/tests,
# then the decode step's links (the gated form is kbit.Experts' forward's ops) and the Experts forward against its two
# grouped calls (scripts/probe_experts_decode.py, as session 57's run 8). PART=b: every other test file, then
# compute-sanitizer memcheck and racecheck on the glue cases (the gated epilogue's, the interleaved silu's).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
if [ "${PART:-a}" = a ]; then
  timeout 330 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests > $OUT/tests-gemm.log 2>&1
  echo "tests gemm rc=$?"; tail -3 $OUT/tests-gemm.log | cut -c1-300
  timeout 150 python3 scripts/probe_experts_links.py --experts 128,512 --tokens 1,4,16 --rounds 3 --out $OUT \
    > $OUT/links.log 2>&1; echo "links rc=$?"; grep -v Warn $OUT/links.log | cut -c1-300
  timeout 60 python3 scripts/probe_experts_decode.py --experts 128 --tokens 1,4,16 --out $OUT/experts \
    > $OUT/experts.log 2>&1; echo "experts rc=$?"; grep -v Warning $OUT/experts.log | cut -c1-200
else
  timeout 400 python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
  echo "tests other rc=$?"; tail -3 $OUT/tests-other.log | cut -c1-300
  sanitize_run memcheck 80 moe-glue
  sanitize_run racecheck 80 moe-glue
fi
