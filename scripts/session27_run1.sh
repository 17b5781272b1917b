#!/usr/bin/env bash
# Session 27, device run 1 (carried build of a320dd3's sources): is the decode GEMV's grid tail worth a
# balanced split? The dense GEMV at M = 1 and 4 on sizes whose 16-row tiles fill the grid's unit slots
# (528 on the H200: 4 CTAs per SM) 1, 1.25, 1.5, 1.7 (8B gate/up) and 2 times, K = 4096; and 1584 / 1792
# (70B gate/up) / 2112 tiles at K = 8192; under the rule and with 8 warps per unit. If the time per tile
# at a whole number of rounds is below 8B's, a split that balances 8B's 1.7 rounds gains that much.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py \
  --shapes 8448x4096,10560x4096,12672x4096,14336x4096,16896x4096,25344x8192,28672x8192,33792x8192 --ms 1,4 \
  --settings 1:1,1:1:1:0:8:8 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log; tail -3 $R/gemv.log
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
