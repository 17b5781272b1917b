#!/usr/bin/env bash
# Session 39, device run 1 (1b7e46c's csrc): what bounds the grouped GEMV at 8 rows with x shared. The x-shared test's
# rule / CTA-shape checks (never run on the GPU) and the resource checks; Nsight Compute (warp stalls) on 64 x 8
# gate/up and down and 16 x 8 gate/up (k = 4); the ring's stages 2-4 against the launcher's at 16-64 experts x 8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x" tests/test_kernel_resources.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
SHAPES="gu64x8: --k 4 --M 8 --experts 64 --N 512 --K 2048
dn64x8: --k 4 --M 8 --experts 64 --N 2048 --K 512
gu16x8: --k 4 --M 8 --experts 16 --N 512 --K 2048" KERNEL=scalar_gemv STALLS=1 OUT=$R timeout 200 bash scripts/ncu_gemm.sh \
  > $OUT/ncu.log 2>&1; echo "ncu rc=$?"; cat $OUT/ncu.log | cut -c1-160
timeout 150 python3 scripts/probe_grouped_schedule.py --k 4 --experts 16,32,64 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:2,2:1:8:0:1:3,2:1:8:0:1:4 --reps 3 --out $R/probe > $OUT/probe.log 2>&1
echo "probe rc=$?"; grep "^| " $OUT/probe.log
