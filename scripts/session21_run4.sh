#!/usr/bin/env bash
# Session 21, device run 4: MoE decode as kbit.Experts calls it (one grouped call over all E experts,
# a few active) against the compacted call and fp16 bmm (scripts/probe_moe_sparse.py).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s21; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 280 python3 scripts/probe_moe_sparse.py --experts 128,512 --active 8 --rows 1,4 --out $R/sparse \
  > $R/sparse.log 2>&1; grep "^|" $R/sparse.log; tail -5 $R/sparse.log | grep -v "^|"
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
