#!/usr/bin/env bash
# Session 59, run 18 (8b9a7a3's build: the new 4-warps-a-unit rule): the rule against 8 warps a unit forced (the old
# rule's plan there) at k = 2, 5 and 4, 8-16 experts x 1 row, one machine (scripts/probe_grouped_active.py).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for k in 2 5 4; do
  timeout 40 python3 scripts/probe_grouped_active.py --shapes moe_gu --active 8,9,12,16 --unit-warps 0,8 --k $k \
    --out $OUT/k$k > $OUT/grouped-active-k$k.log 2>&1
  echo "== k $k rc=$?"; grep "^| moe" $OUT/grouped-active-k$k.log | cut -d'|' -f2-5
done
