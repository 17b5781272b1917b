#!/usr/bin/env bash
# Session 37, device run 1 (x resident at one row from three staged rounds): Llama-3 70B / 8B at M = 1 by the rule
# and with x resident off (aid 0) for k = 2-5, kbit.gemm at M = 1 (k = 2-5) and Qwen3 KV / O / Q at k = 2 M = 16, then the GEMV, dispatch and reference tests
# of test_cuda_gemm and test_kernel_resources.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
for k in 2 3 4 5; do
  mkdir -p $R/k$k; timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama70b_gu,llama8b_gu --ms 1 --reps 2 --k $k \
    --settings 1:0,1:0:0 --out $R/k$k > $R/probe-k$k.log 2>&1; echo "probe k$k rc=$?"; grep "^| llama" $R/probe-k$k.log | cut -c1-200
done
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama70b_gu,llama8b_gu,glm_shared_gu,gateup --ms 1 --ks 2,3,4,5 --out $R/m1 > $R/m1.log 2>&1
python3 scripts/ab_table.py s37=$R/m1 --path gemm | tail -18
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,O,Q --ms 16 --ks 2 --out $R/k2m16 > $R/k2m16.log 2>&1
python3 scripts/ab_table.py s37=$R/k2m16 --path gemm | tail -4
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -k "gemv or dispatch or reference" tests/test_kernel_resources.py \
  -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
