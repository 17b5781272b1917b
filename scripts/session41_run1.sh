#!/usr/bin/env bash
# Session 41, device run 1: x shared at 4 token slots on K of 2 groups (the aid's mode 3, with runs) against the rule
# on Qwen3 MoE down 64 / 512 x 4 (k = 4, 2); the MoE decode sweep with 256 experts (#5's 256 x 1); session 40's
# never-run tests (the x-shared and plan tests, its runs-of-4 case over two rounds) and compute-sanitizer racecheck /
# memcheck on the x-shared cases (logs straight into $OUT; a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
probe() {  # label k shapes experts per-expert settings
  timeout 120 python3 scripts/probe_grouped_schedule.py --k $2 --shapes $3 --experts $4 --per-expert $5 \
    --settings $6 --reps 3 --out $R/$1 > $OUT/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $OUT/probe-$1.log
}
probe dn4-k4 4 moe_dn 64,512 4 2:1,2:1:8:0:3,2:1:8:0:3:0:2,2:1:8:0:3:0:1
probe dn4-k2 2 moe_dn 64,512 4 2:1,2:1:8:0:3
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,256,512 --sweep-ms 1,4 --out $R/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
for tool in racecheck memcheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
    > $OUT/$tool-shared-x.log 2>&1; echo "$tool shared-x rc=$?"; tail -2 $OUT/$tool-shared-x.log | cut -c1-300
done
