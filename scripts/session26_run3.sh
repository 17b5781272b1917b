#!/usr/bin/env bash
# Session 26, device run 3 (carried build of 9a01cfe's sources; the harness now waits out the GPU's power /
# thermal clock limits before each timing): benchmarks.tune_dispatch again on the H200 (its table, timed from
# unthrottled clocks); kbit.gemm on the Llama-3 shapes at M = 1-1024 (are the decode cells now the ones of an
# idle GPU?); the rest of the GPU suite (test_fuzz.py onward, and benchmarks/tests). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
start=$(date +%s)
mkdir -p $R/tune; timeout ${TUNE_S:-240} python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$? in $(( $(date +%s) - start )) s"
timeout 80 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu --ms 1,4,16,64,256,1024 --ks 4 \
  --out $R/gemm-l3 > $R/gemm-l3.log 2>&1; echo "gemm-l3 rc=$?"; grep "k=4" $R/gemm-l3.log | tr -s ' ' | tr '\n' ';'; echo
python3 - $R/gemm-l3/ab-*.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print("settle_ms / sm_mhz:", [(r["shape"][:9], r["M"], r["path"], round(r["settle_ms"]), r["sm_mhz"]) for r in rows])
PY
files=$(ls tests/test_*.py | awk '$0 >= "tests/test_fuzz.py"')
timeout 260 python3 -m pytest $files benchmarks/tests -q --maxfail=10 > $R/tests-part2.log 2>&1
tail -1 $R/tests-part2.log; grep -E "^(FAILED|ERROR)" $R/tests-part2.log | head -8
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
