#!/usr/bin/env bash
# Session 40, device run 2: runs of 2 units a warp a round in the grouped x-shared GEMV (TcGemmArgs::shared_x_run;
# kbit._C._set_gemv_shared_x_run): the x-shared and plan tests; Qwen3 MoE down at 64 / 128 / 512 x 8 (rule / run 1 /
# run 2), gate/up 64 / 512 x 8 (rule / run 2 forced), GLM MoE down 64 x 8 (rule / run 2), k = 2 down 64 x 8 (rule / run
# 1); compute-sanitizer (racecheck, memcheck) on the x-shared cases with runs.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
probe() {  # label k shapes experts settings
  timeout 150 python3 scripts/probe_grouped_schedule.py --k $2 --shapes $3 --experts $4 --per-expert 8 \
    --settings $5 --reps 3 --out $R/$1 > $OUT/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $OUT/probe-$1.log
}
probe dn-k4 4 moe_dn 64,128,512 2:1,2:1:8:0:1:0:1,2:1:8:0:1:0:2
probe gu-k4 4 moe_gu 64,512 2:1,2:1:8:0:1:0:2
probe glm-k4 4 glm_moe_dn 64 2:1,2:1:8:0:1:0:2
probe dn-k2 2 moe_dn 64 2:1,2:1:8:0:1:0:1
for tool in racecheck memcheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda grouped-shared-x \
    > $OUT/$tool-shared-x.log 2>&1; echo "$tool shared-x rc=$?"; tail -2 $OUT/$tool-shared-x.log | cut -c1-300
done
