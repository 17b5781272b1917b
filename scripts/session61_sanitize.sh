#!/usr/bin/env bash
# Session 61: compute-sanitizer on kbit::grouped_gemm_slots' by-slot grouped GEMV (scripts/sanitize_cases.py cuda
# moe-slots): memcheck, then racecheck, on the final build.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
python3 scripts/sanitize_cases.py cuda moe-slots 2>&1 | tail -2  # (plain, first: a failing check shows here)
SAN_TAIL=4 sanitize_run memcheck 150 moe-slots
SAN_TAIL=4 sanitize_run racecheck 150 moe-slots
