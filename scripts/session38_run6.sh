#!/usr/bin/env bash
# Session 38, device run 6 (main's csrc with the grouped x-shared rule): the grouped GEMV tests and kernel resources;
# compute-sanitizer racecheck, synccheck and memcheck on the x-shared cases; the MoE sweep (k = 4, against fp16 bmm);
# the rule at k = 2 (40 / 48 / 64 experts x 8 rows) against 8-warp CTAs and forced one warp per unit; kbit.gemm at
# M = 1536-4096 (the dispatch table past 1024) against cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 160 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -q \
  -k "shared_x or grouped_gemv or resources or grouped_gemm" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed|Timeout" $R/tests.log | head -20 | cut -c1-300
for tool in racecheck synccheck memcheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
    > $R/$tool-shared-x.log 2>&1; echo "$tool shared-x rc=$?"; tail -2 $R/$tool-shared-x.log | cut -c1-300
done
timeout 120 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
timeout 60 python3 scripts/probe_grouped_schedule.py --k 2 --experts 40,48,64 --per-expert 8 \
  --settings 2:1,2:1:8:0:2,2:1:8:1 --reps 3 --out $R/probe-k2 > $R/probe-k2.log 2>&1; echo "probe rc=$?"
grep "^| moe" $R/probe-k2.log
timeout 120 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu --ms 1024,1536,2048,3072,4096 \
  --ks 4 --out $R/gemm-large > $R/gemm-large.log 2>&1; echo "gemm-large rc=$?"
python3 scripts/ab_table.py s38=$R/gemm-large --path gemm > $R/gemm-large-table.md; cat $R/gemm-large-table.md | head -40
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
