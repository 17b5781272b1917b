#!/usr/bin/env bash
# Session 59, device run 14 (38da82b's build, before the launch rule): the grouped call over all E experts against the same call over the
# active experts' weights alone (scripts/probe_moe_sparse.py), 10 active experts x 1 row (the HF model's routing:
# top-10, one token), E = 128 and 512, the per-CTA scans (form 0) and the default (the row schedule), offsets hot as
# a model's routing leaves them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 scripts/probe_moe_sparse.py --shapes moe_gu,moe_dn --experts 128,512 --active 10 --rows 1 \
  --forms 0,2 --hot-offsets --out $OUT > $OUT/moe-sparse.log 2>&1
echo "moe sparse rc=$?"; grep -v Warn $OUT/moe-sparse.log | tail -14 | cut -c1-250
