#!/usr/bin/env bash
# Session 45, device run 6 (four calls on one warm machine; the two builds do not fit one call's 64 MiB): session 44's
# open question, the wgmma op at 128-token calls (Qwen3 down, O, Q, gate/up at M = 128-1024) under main's build
# against session 43's (7f983db, before the persistent loop): BUILD=main (the carried build), BUILD=s43 (session 43's
# kbit package and extension in .s43/, git-ignored), BUILD=main again; LABEL names the JSON. SANITIZE=1 (a main call):
# also compute-sanitizer racecheck and synccheck on the wgmma split cases with persistent CTAs (sanitize_cases.py
# wgmma-splits 2,3: M = 100, 130), which session 44 did not run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
SH=down,O,Q,gateup; MS=128,256,384,512,768,1024
if [ "${BUILD:-main}" = s43 ]; then
  OUT=${OUT:-out}; mkdir -p $OUT
  xz -d -k -f .s43/kbit/_C.cpython-312-x86_64-linux-gnu.so.xz
  PYTHONPATH=$(pwd)/.s43:$(pwd) timeout 150 python3 scripts/probe_wgmma_build_ab.py --shapes $SH --ms $MS \
    --label $LABEL --out $OUT/ab-$LABEL.json > $OUT/ab-$LABEL.log 2>&1; echo "$LABEL rc=$?"
else
  start_device_run || exit 1
  timeout 150 python3 scripts/probe_wgmma_build_ab.py --shapes $SH --ms $MS --label $LABEL \
    --out $OUT/ab-$LABEL.json > $OUT/ab-$LABEL.log 2>&1; echo "$LABEL rc=$?"
  if [ -n "${SANITIZE:-}" ]; then
    for tool in racecheck synccheck; do sanitize_run $tool 200 wgmma-splits 2,3; done
  fi
fi
grep -E "\||kbit from" $OUT/ab-$LABEL.log
