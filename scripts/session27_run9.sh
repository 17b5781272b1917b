#!/usr/bin/env bash
# Session 27, device run 9 (carried build): after the review mends (the split kernel's body compiled only for
# sm_90+, the launcher's sm_90 check; tests and sanitizer cases): the GEMV tests of tests/test_cuda_gemm.py, the
# tensors past 2^31 elements, compute-sanitizer memcheck and racecheck on the split cases (now also k = 2, 5 in
# bf16), and the split against the plain kernel on 70B at M = 1 / 4 (k = 4).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama70b_gu,llama8b_gu --ms 1,4 \
  --settings 1:1:1:0:8:0:0,1:1 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-split \
    > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_large_tensors.py -q -k "gemv or large or 2_31" \
  > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
