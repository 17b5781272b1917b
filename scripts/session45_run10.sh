#!/usr/bin/env bash
# Session 45, device run 10 (main's csrc, session 44's): scripts/sanitize_cases.py after its aids' context manager
# (45d5ba1): compute-sanitizer memcheck on the wgmma split cases (all four) and the persistent subset, synccheck on the
# persistent subset.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for c in "memcheck wgmma-splits" "memcheck wgmma-persistent" "synccheck wgmma-persistent"; do
  set -- $c
  timeout 150 compute-sanitizer --tool $1 --error-exitcode 9 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda $2 > $OUT/$1-$2.log 2>&1
  echo "$1 $2 rc=$?"; tail -2 $OUT/$1-$2.log | cut -c1-300
done
