#!/usr/bin/env bash
# Session 38, device run 3: grouped x shared in CTAs of 8 or 16 warps (the rule) against 8 (aid mode 2) and x staged per
# warp (mode 0): the grouped GEMV tests and kernel resources, then the grouped probe (alternating settings).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py -q -x \
  -k "shared_x or grouped_gemv or resources or grouped_gemm" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed|Timeout" $R/tests.log | head -20 | cut -c1-300
timeout 200 python3 scripts/probe_grouped_schedule.py --experts 8,64,512 --per-expert 4,8 --settings 2:1,2:1:8:0:2,2:1:8:0:0 \
  --reps 3 --out $R/probe > $R/probe.log 2>&1; echo "probe rc=$?"
grep "^|" $R/probe.log
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
