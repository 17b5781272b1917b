#!/usr/bin/env bash
# Session 58, device run 3: kbit::moe_route_gather as one CTA a token, x[t] loaded before the sort (run 2's kernel:
# a CTA a row, x read after the sort). Its tests, the glue's PDL chain test, opcheck and the Experts tests; the decode
# step's links with the fused op against route + gather (scripts/probe_experts_links.py); compute-sanitizer memcheck
# and racecheck on the glue cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_moe_ops.py tests/test_dependent_launch.py tests/test_opcheck.py \
  tests/test_nn.py -k "moe or glue or combine or route or gather or xperts" > $OUT/tests-moe.log 2>&1
echo "tests moe rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe.log | tail -8 | cut -c1-300
timeout 200 python3 scripts/probe_experts_links.py --experts 128,512 --tokens 1,4,16 --rounds 3 --out $OUT \
  > $OUT/links.log 2>&1; echo "links rc=$?"; grep -v Warn $OUT/links.log | cut -c1-300
sanitize_run memcheck 100 moe-glue
sanitize_run racecheck 100 moe-glue
