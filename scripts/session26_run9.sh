#!/usr/bin/env bash
# Session 26, device run 9 (carried build after the review mends: tables chosen by chip, then name): the
# dispatch, prefill and grouped-rule tests of test_cuda_gemm.py and benchmarks/tests; the harness's clock
# watch on the real NVML (ab_paths on 8B gate/up at M = 1024 and 1: sm_mhz, settle_ms); the suite's case
# order (benchmarks.run fast on Qwen3 gate/up). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
python3 -c "import kbit; print(kbit._C.gemm_dispatch(1, 5120, 2048, 4), kbit._C.grouped_gemm_dispatch(8, 8, 512, 2048, 4))"
timeout 200 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q --maxfail=10 \
  -k "dispatch or prefill or takes_the_gemv or tune or harness or graph_timer or dry_run" > $R/tests.log 2>&1
tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head -8
timeout 60 python3 -W always -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu --ms 1,1024 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
echo "gemm rc=$?"; grep -E "k=4|Warn" $R/gemm.log | tr -s ' '
python3 - $R/gemm/ab-*.json <<'PY'
import json, sys
print([(r["M"], r["path"], round(r["us"], 1), r["sm_mhz"], round(r["settle_ms"])) for r in json.load(open(sys.argv[1]))["rows"]])
PY
timeout 90 python3 -m benchmarks.run --mode fast --shapes gateup --ms 1,4,64 --ks 4 --no-model --no-plots --out $R/run > $R/run.log 2>&1
echo "run rc=$?"; grep -A8 "### M = 1 (fp16, cold" $R/run/*/results-fast.md | head -8
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
