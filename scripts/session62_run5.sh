#!/usr/bin/env bash
# Session 62, run 5: kbit::router_topk's kernel as one warp a row (redux.sync selection rounds; runs 2-4 had eight
# warps a row and a merge): its tests and opcheck, the sanitizer cases plain and under memcheck / racecheck, the probe.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 60 python3 -m pytest -q -rs -p no:cacheprovider tests/test_router_topk.py tests/test_opcheck.py -k router \
  > $OUT/tests-router.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests-router.log | tail -6 | cut -c1-300
python3 scripts/sanitize_cases.py cuda router 2>&1 | tail -2
SAN_TAIL=2 sanitize_run memcheck 60 router
SAN_TAIL=2 sanitize_run racecheck 60 router
timeout 60 python3 scripts/probe_router.py --experts 128,512 --topk 8,10 --tokens 1,4 --json $OUT/probe-router.json \
  > $OUT/probe-router.log 2>&1
echo "probe rc=$?"; grep "^|" $OUT/probe-router.log
tar -C "$OUT" -czf /tmp/session62_run5.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session62_run5.tgz "$OUT"/
