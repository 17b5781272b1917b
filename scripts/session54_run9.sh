#!/usr/bin/env bash
# Session 54, device run 9, an uncommitted experiment (run on a tree with run9-experiment.diff applied, in
# docs/benchmarks/nvidia-h200/2026-11-30-session54/): stream-K with one zeroed counter buffer kept for the process (no
# zero-fill a call), against the rule, on the shapes where the kernels alone were level (ncu, run 6).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 scripts/probe_wgmma_aid_sets.py --shapes llama70b_gu,llama8b_gu,glm_shared_gu,Q \
  --ms 256,384,512 --rounds 3 --configs "rule:;stream:wgmma_stream=2" \
  --out $OUT/stream-kept.json > $OUT/stream-kept.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/stream-kept.log | cut -c1-90
