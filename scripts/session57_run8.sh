#!/usr/bin/env bash
# Session 57, device run 8: moe_combine with its token's slots staged in shared memory (one thread a slot) and each
# chunk's eight y loads issued at once. test_moe_ops.py and the glue's PDL tests; compute-sanitizer memcheck and
# racecheck on the glue cases; each glue kernel alone and a decode step of 128 experts (as runs 4, 5 and 7).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m pytest -q tests/test_moe_ops.py tests/test_dependent_launch.py -k "moe or glue or combine" \
  > $OUT/tests-moe.log 2>&1; echo "tests moe rc=$?"; tail -1 $OUT/tests-moe.log | cut -c1-200
timeout 60 python3 scripts/probe_glue_ops.py --experts 128 --tokens 1,4,16 --json $OUT/glue-ops.json \
  > $OUT/glue-ops.log 2>&1; echo "glue ops rc=$?"; grep -v Warn $OUT/glue-ops.log | cut -c1-200
timeout 100 python3 scripts/probe_experts_decode.py --experts 128 --tokens 1,4,16 --out $OUT/experts \
  > $OUT/experts.log 2>&1; echo "experts rc=$?"; grep -v Warning $OUT/experts.log | cut -c1-200
sanitize_run memcheck 100 moe-glue
sanitize_run racecheck 100 moe-glue
