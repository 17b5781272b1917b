#!/usr/bin/env bash
# Session 16, device run 4 (carried build of 4e27273): warps per unit of the slotted x-resident GEMV
# on the Qwen3 layers (the rule, 1:1:1:0:8:0, against 4 and 8 warps per unit, ...:4 / ...:8; with
# 4 warps a K = 2048 CTA holds four slots) at M = 8-64, fp16 / wgmma beside; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r4; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 scripts/probe_gemv_launch.py --shapes Q,gateup,O,down --ms 8,16,24,32,48,64 \
  --settings 1:1:1:0:8:0,1:1:1:0:8:4,1:1:1:0:8:8 --reps 2 --baselines fp16,wgmma --out $R/probe > $R/probe.log 2>&1
grep "^|" $R/probe.log
tar -czf $OUT/run4.tar.gz -C $R .; cp $R/probe.log $OUT/
