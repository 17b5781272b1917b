#!/usr/bin/env bash
# Session 57, device run 5: moe_combine's slots 8 at a time (their ids, rows and weights loaded together, then their y
# values, then summed in order). The glue's tests, the Experts / block / HF tests; compute-sanitizer memcheck and
# racecheck on the glue cases; each glue kernel timed alone (scripts/probe_glue_ops.py, as run 4 on the previous
# build) and a decode step of 128 experts (scripts/probe_experts_decode.py, as run 2).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 60 python3 scripts/probe_glue_ops.py --experts 128 --tokens 1,4,16 --json $OUT/glue-ops.json \
  > $OUT/glue-ops.log 2>&1; echo "glue ops rc=$?"; grep -v Warn $OUT/glue-ops.log | cut -c1-200
timeout 100 python3 scripts/probe_experts_decode.py --experts 128 --tokens 1,4,16 --out $OUT/experts \
  > $OUT/experts.log 2>&1; echo "experts rc=$?"; grep -v Warning $OUT/experts.log | cut -c1-200
timeout 200 python3 -m pytest -q tests/test_moe_ops.py tests/test_dependent_launch.py tests/test_block.py \
  tests/test_integration_transformers.py > $OUT/tests-glue.log 2>&1
echo "tests glue rc=$?"; tail -2 $OUT/tests-glue.log | cut -c1-300
timeout 60 python3 -m pytest -q tests/test_nn.py -k "Experts or experts" > $OUT/tests-nn-experts.log 2>&1
echo "tests nn rc=$?"; tail -1 $OUT/tests-nn-experts.log | cut -c1-200
sanitize_run memcheck 150 moe-glue
sanitize_run racecheck 150 moe-glue
