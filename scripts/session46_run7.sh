#!/usr/bin/env bash
# Session 46, device run 7 (the final csrc, c9ee548's build): compute-sanitizer memcheck, racecheck and synccheck on
# sanitize_cases.py's gemv-slots cases, which now include the rule's x-staged layout at 1 and 4 rows (the late PDL
# wait, the codebook by cp.async into the sums' space), also on a 3-tile weight.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
sanitize_run memcheck 100 gemv-slots
sanitize_run synccheck 100 gemv-slots
sanitize_run racecheck 170 gemv-slots
