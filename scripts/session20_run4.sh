#!/usr/bin/env bash
# Session 20, device run 4 (the carried build of run 3, and the grouped-schedule sanitizer cases): the decode
# rows (M = 1-4) against cuBLAS fp16 and PyTorch int4 at k = 2-5, compute-sanitizer on the grouped GEMV's
# per-CTA schedule, every GPU test file but test_cuda_gemm.py; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 90 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 2,3,4,5 --dtypes fp16 --kernels kbit,fp16,int4 --max-minutes 1.2 \
  --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,2,3,4 --out $R/decode > $R/decode.log 2>&1; tail -1 $R/decode.log
for tool in memcheck racecheck synccheck; do
  timeout 40 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|ran" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
timeout 330 python3 -m pytest tests benchmarks/tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py \
  > $R/tests-rest.log 2>&1; tail -2 $R/tests-rest.log
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
