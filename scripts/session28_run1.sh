#!/usr/bin/env bash
# Session 28, device run 1 (carried build): the dense GEMV's wide pair table (scalar_gemv.cuh, kWide: a k = 4
# lookup's address is one PRMT instead of PRMT + IMAD; the rings in the table's gaps; CTAs of two 4-warp unit
# slots) and the strength-reduced item loop (both kernels). First its tests (bitwise against the plain kernel),
# then the A/B: the rule (plain, split where its rule says), the wide table forced, the plain kernel without the
# split, at M = 1-4 on the Llama-3 and Qwen3 sizes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" \
  > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down,KV --ms 1,2,3,4 --k 4 \
  --settings 1:1,1:1:1:0:8:0:0:1:1,1:1:1:0:8:0:0 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
