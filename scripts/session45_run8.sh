#!/usr/bin/env bash
# Session 45, device run 8: run 7's racecheck and memcheck of the wgmma persistent cases again, the split case with
# one cluster of whole units first (run 7's case asked for every unit split, which launches one cluster per cluster of
# work, and stopped there after the one-split cases: 0 hazards, 0 errors).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for tool in racecheck memcheck; do sanitize_run $tool 240 wgmma-persistent; done
