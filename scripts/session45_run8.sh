#!/usr/bin/env bash
# Session 45, device run 8: run 7's racecheck and memcheck of the wgmma persistent cases again, the split case with
# one cluster of whole units first (run 7's case asked for every unit split, which launches one cluster per cluster of
# work, and stopped there after the one-split cases: 0 hazards, 0 errors).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for tool in racecheck memcheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-persistent > $OUT/$tool-wgmma-persistent.log 2>&1
  echo "$tool rc=$?"; tail -3 $OUT/$tool-wgmma-persistent.log | cut -c1-300
done
