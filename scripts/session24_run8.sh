#!/usr/bin/env bash
# Session 24, device run 8 (carried build, main's kernels = 5f5bec5's, stamp 0e988896): compute-sanitizer
# memcheck and racecheck on the wgmma cluster cases, now with the image pass launched without PDL too
# (the final review: the rule takes that form on O / down at M >= 96 and on Llama sizes). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s24; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|ran" $R/sanitize-wgmma-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
