#!/usr/bin/env bash
# Session 40, device run 3: the scans' static first chunks in the x-shared kernel (T >= 4 E) and runs of 2 wherever
# they keep the critical path: the grouped tests and the spill check; static (the rule, form 2) against the plain
# scans (form 0) on the x-shared MoE cells; the MoE sweep (numbers of record); compute-sanitizer on the x-shared cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -q \
  -k "shared_x or launch_plan or static_first or row_schedule or warp_schedule or resources" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 150 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 64,128,512 --per-expert 8 \
  --settings 2:1,0:1 --reps 3 --out $R/static > $OUT/probe-static.log 2>&1
echo "probe static rc=$?"; grep "^| " $OUT/probe-static.log
timeout 60 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,glm_moe_gu --experts 64 --per-expert 4 \
  --settings 2:1,0:1 --reps 3 --out $R/static4 > $OUT/probe-static4.log 2>&1
echo "probe static4 rc=$?"; grep "^| " $OUT/probe-static4.log
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
for tool in racecheck memcheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
    > $R/$tool-shared-x.log 2>&1; echo "$tool shared-x rc=$?"; tail -2 $R/$tool-shared-x.log | cut -c1-300
done
