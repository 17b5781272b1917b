#!/usr/bin/env bash
# Session 59, device run 12 (the final build): kbit.Experts' decode step at the HF model's routing (512 experts,
# top-10, one token) against its two grouped calls alone, to set run 11's in-model grouped GEMV (9.2 us a call by
# CUPTI) against the call in isolation.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 60 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1 --topk 10 --out $OUT \
  > $OUT/experts-decode-top10.log 2>&1
echo "experts decode rc=$?"; grep -v Warn $OUT/experts-decode-top10.log | tail -6 | cut -c1-250
