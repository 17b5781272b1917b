#!/usr/bin/env bash
# Session 59, device run 15 (38da82b's build, before the launch rule): the compacted grouped call at 8-16 experts x 1 row with the warps per
# unit by the rule and forced, and the rule's plans (scripts/probe_grouped_active.py, new): why 10 x 1 ran 1.5 us
# slower than 8 x 1 in run 14.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 scripts/probe_grouped_active.py --active 8,9,10,12,16 --unit-warps 0,1,2,4,8 --out $OUT \
  > $OUT/grouped-active.log 2>&1
echo "grouped active rc=$?"; grep -v Warn $OUT/grouped-active.log | tail -14 | cut -c1-250
