#!/usr/bin/env bash
# Session 58, device run 1 (main's kernels, session 57's final build): what each kernel of a kbit.Experts decode step
# costs the step (scripts/probe_experts_links.py: the step with one kernel's work replaced by its precomputed output).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 scripts/probe_experts_links.py --experts 128,512 --tokens 1,4,16 --rounds 3 --out $OUT \
  > $OUT/links.log 2>&1; echo "links rc=$?"; grep -v Warn $OUT/links.log | cut -c1-300
