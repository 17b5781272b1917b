#!/usr/bin/env bash
# Session 42, device run 2 (the new fallback, its epilogue's L2 discard, the dispatch table merged from run 1's
# sweep): where the fallback's time goes, with and without the discard (probe_dequant_cublas, M = 1024-4096);
# test_cuda_gemm.py whole; compute-sanitizer memcheck / initcheck on the dequantize + cuBLAS cases (capped row scales
# included).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 130 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,O,down,KV,glm_shared_gu,llama8b_gu \
  --ms 1024,2048,4096 > $OUT/probe-dqcublas.log 2>&1; echo "probe rc=$?"
grep -v Warn $OUT/probe-dqcublas.log | cut -c1-220
timeout 330 python3 -m pytest tests/test_cuda_gemm.py tests/test_initcheck_known.py -q > $OUT/tests-gemm.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
for tool in memcheck initcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda dequant-cublas \
    > $OUT/$tool-dequant-cublas.log 2>&1; echo "$tool rc=$?"; tail -2 $OUT/$tool-dequant-cublas.log | cut -c1-300
done
python3 scripts/initcheck_known.py $OUT/initcheck-dequant-cublas.log; echo "initcheck_known rc=$?"
