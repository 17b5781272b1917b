#!/usr/bin/env bash
# Session 41, device run 2 (the rule: x shared at 4-7 token slots on K of 2-3 groups where runs of 2 or 4 apply):
# Qwen3 MoE down 64 / 256 / 512 x 4 at k = 2-5, the rule against x never shared (mode 0: session 40's plans there);
# gate/up 512 x 4 (runs of 4 by session 40's rule, unmeasured) against one unit a run; the x-shared and plan tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
probe() {  # label k shapes experts per-expert settings
  timeout 150 python3 scripts/probe_grouped_schedule.py --k $2 --shapes $3 --experts $4 --per-expert $5 \
    --settings $6 --reps 3 --out $R/$1 > $R/probe-$1.log 2>&1
  echo "probe $1 rc=$?"; grep "^| " $R/probe-$1.log
}
for k in 4 2 3 5; do probe dn4-k$k $k moe_dn 64,256,512 4 2:1,2:1:8:0:0; done
probe gu4-k4 4 moe_gu 512 4 2:1,2:1:8:0:1:0:1
cat $R/probe-*.log > $OUT/probes.log; tar czf $OUT/r2-probes.tar.gz -C $R . && rm -rf $R
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
