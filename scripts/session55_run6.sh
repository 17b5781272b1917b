#!/usr/bin/env bash
# Session 55, device run 6: scripts/probe_power.py after the review's mend (the steady window and the energy from a
# drained queue at half the phase), on three of run 1's cells.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 scripts/probe_power.py --seconds 1.2 --cool 1.0 --rounds 2 \
  --cells llama70b_gu:512,Q:1024,llama8b_gu:1 --out $OUT/power.json > $OUT/power.log 2>&1; echo "probe rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/power.log | cut -c1-170
