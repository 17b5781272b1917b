#!/usr/bin/env bash
# Session 31, device run 11 (carried build: main's after the review's mends: the M = 33-64 shape rule also asks four
# warpgroups for no more waves): the wgmma, plan, staging and dequantize tests; the benchmark scripts whose weight copies
# moved to benchmarks/weights.rotated_copies, each on one small cell (ab_paths, tune_grouped, bench_pdl, the two probes).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-11}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_cuda_format.py -q -k "wgmma or plan or staging or dequant or tiled" \
  > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -5 | cut -c1-300
timeout 60 python3 -m benchmarks.ab_paths --ops gemm,wgmma_gemm --shapes Q,llama8b_gu --ms 64 --ks 4 --out $R/ab > $R/ab.log 2>&1
echo "ab_paths rc=$?: $(grep -E '^(Q|llama8b_gu) ' $R/ab.log | tr '\n' ' ')"
timeout 60 python3 -m benchmarks.tune_grouped --shapes moe_gu --experts 8 --per-expert 1 --out $R/tg > $R/tg.log 2>&1
echo "tune_grouped rc=$?: $(tail -2 $R/tg.log | tr '\n' ' ' | cut -c1-200)"
timeout 60 python3 -m benchmarks.bench_pdl --shapes Q --ms 1 --reps 1 --out $R/pdl > $R/pdl.log 2>&1
echo "bench_pdl rc=$?: $(tail -2 $R/pdl.log | tr '\n' ' ' | cut -c1-200)"
timeout 60 python3 scripts/probe_wgmma_configs.py --shapes Q --ms 64 --row-tiles 0 --splits 0 --staging 0 2>&1 | grep -v -i warn | tee $R/probe-configs.log
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q --ms 64 2>&1 | grep -v -i warn | tee $R/probe-dequant.log
tar -czf $OUT/run${RUN:-11}.tar.gz -C $R .
