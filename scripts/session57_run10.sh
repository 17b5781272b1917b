#!/usr/bin/env bash
# Session 57, device run 10: the final build (the review's mends: moe_combine without its unused padding entries,
# moe_gather's NaN bits by a helper). test_moe_ops.py whole (new: rows past the grid, strided inputs, top-300 combine),
# the glue's PDL chain test on a poisoned allocator, the Experts and opcheck glue tests; compute-sanitizer memcheck and
# racecheck on the glue cases (every copy width, top-300); each glue kernel alone (as runs 4-8).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m pytest -q tests/test_moe_ops.py > $OUT/tests-moe-ops.log 2>&1
echo "test_moe_ops rc=$?"; tail -1 $OUT/tests-moe-ops.log | cut -c1-200
timeout 100 python3 -m pytest -q tests/test_dependent_launch.py tests/test_nn.py tests/test_opcheck.py \
  -k "glue or Experts or experts or moe" > $OUT/tests-glue.log 2>&1
echo "tests glue rc=$?"; tail -1 $OUT/tests-glue.log | cut -c1-200
sanitize_run memcheck 100 moe-glue
sanitize_run racecheck 100 moe-glue
timeout 60 python3 scripts/probe_glue_ops.py --experts 128 --tokens 1,4,16 --json $OUT/glue-ops.json \
  > $OUT/glue-ops.log 2>&1; echo "glue ops rc=$?"; grep -v Warn $OUT/glue-ops.log | cut -c1-200
