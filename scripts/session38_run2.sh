#!/usr/bin/env bash
# Session 38, device run 2: grouped x shared (a CTA's warps take one chunk's tiles a round, x copied once per CTA):
# the grouped GEMV tests, the prefill / dispatch tests (the table to M = 4096), the kernel resources; then the
# grouped probe, x shared (the rule) against x staged per warp, alternating, Qwen3 MoE experts.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -q -x \
  -k "shared_x or grouped_gemv or prefill_m or dispatch_follows or resources or grouped_gemm" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed|Timeout" $R/tests.log | head -20 | cut -c1-300
timeout 200 python3 scripts/probe_grouped_schedule.py --experts 8,64,512 --per-expert 4,8 --settings 2:1,2:1:8:0:0 \
  --reps 3 --out $R/probe > $R/probe.log 2>&1; echo "probe rc=$?"
grep "^|" $R/probe.log
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
