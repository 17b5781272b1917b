#!/usr/bin/env bash
# Session 29, device run 2 (carried build): the GEMV rules of this session (x resident at 2-4 rows from 1.5 rounds
# where K has 16+ groups; 4 warps per unit at 5-8 rows, k <= 4) against the settings that give the old plans (x
# staged at M = 2-4, the chooser's warps at 5-8); then the GEMV tests and the GPU test files session 28 did not run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
for k in 4 3 2 5; do
  shapes=llama8b_gu; [ $k = 4 ] && shapes=llama8b_gu,llama70b_gu,gateup,glm_shared_gu
  timeout 90 python3 scripts/probe_gemv_launch.py --shapes $shapes --ms 2,4,5,8 --k $k \
    --settings 1:1,1:1:0,1:1:2:0:8:0 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -k "gemv" > $R/tests-gemv.log 2>&1
echo "tests-gemv rc=$?"; grep -E "^FAILED|passed|failed" $R/tests-gemv.log | tail -6 | cut -c1-300
timeout 200 python3 -m pytest tests/test_opcheck.py tests/test_bad_input.py tests/test_quality.py \
  tests/test_integration_transformers.py tests/test_cuda_format.py tests/test_format.py tests/test_layout.py \
  tests/test_e4m4_native.py tests/test_initcheck_known.py benchmarks/tests -q > $R/tests-other.log 2>&1
echo "tests-other rc=$?"; grep -E "^FAILED|passed|failed" $R/tests-other.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
