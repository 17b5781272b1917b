#!/usr/bin/env bash
# Session 57, device run 2: kbit::moe_gather (kbit.Experts' gather of x, launched with PDL; was ATen's index_select).
# Its tests, the glue's PDL chain test, opcheck, the Experts / block / HF tests; compute-sanitizer memcheck and
# racecheck on the glue cases; then a decode step of 128 experts against its index_select form
# (scripts/probe_experts_decode.py --gather-ab 4).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_moe_ops.py tests/test_dependent_launch.py tests/test_opcheck.py \
  tests/test_block.py tests/test_integration_transformers.py > $OUT/tests-glue.log 2>&1
echo "tests glue rc=$?"; tail -3 $OUT/tests-glue.log | cut -c1-300
timeout 60 python3 -m pytest -q tests/test_nn.py -k "Experts or experts" > $OUT/tests-nn-experts.log 2>&1
echo "tests nn rc=$?"; tail -2 $OUT/tests-nn-experts.log | cut -c1-200
sanitize_run memcheck 150 moe-glue
sanitize_run racecheck 150 moe-glue
timeout 150 python3 scripts/probe_experts_decode.py --experts 128 --tokens 1,4,16 --gather-ab 4 --out $OUT/experts \
  > $OUT/experts.log 2>&1; echo "experts rc=$?"; grep -v Warning $OUT/experts.log | cut -c1-200
