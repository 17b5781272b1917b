#!/usr/bin/env bash
# Session 20, device run 1 (carried build: grouped one-token-slot GEMV launches with a 3-stage copy ring
# where it keeps their CTAs per SM; the dense GEMV up to 128 rows in 8 token chunks):
# the grouped ring depth A/B in one process (2 vs 3 stages, alternating), the MoE sweep through the
# dispatcher, the GEMV past 64 rows against the wgmma kernel, tune_dispatch with the GEMV timed to 128,
# the GEMV tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_grouped_schedule.py --shapes moe_dn,moe_gu --experts 256,8,64,512 --per-expert 1 \
  --settings 2:1:8:0:2,2:1:8:0:3 --reps 3 --out $R/grouped > $R/grouped.log 2>&1; grep "^|" $R/grouped.log
timeout 100 python3 -m benchmarks.ab_paths --ops gemv_gemm,wgmma_gemm --shapes KV,Q,O,gateup,down --ms 64,80,96,128 \
  --ks 4 --out $R/gemv128 > $R/gemv128.log 2>&1; grep "k=4" $R/gemv128.log | tr -s ' ' | tr '\n' ';'; echo
timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --shapes moe_gu,moe_dn \
  --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,2,4 --out $R/moe > $R/moe.log 2>&1; tail -1 $R/moe.log
TUNE_TIMEOUT=200 timeout 210 python3 -m benchmarks.tune_dispatch --out $R/dispatch > $R/dispatch.log 2>&1; tail -2 $R/dispatch.log | cut -c1-300
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "gemv" > $R/tests-gemv.log 2>&1; tail -1 $R/tests-gemv.log
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
