#!/usr/bin/env bash
# Session 26, device run 2 (carried build: main + the H200's own dispatch table, tables matched by GPU name):
# does a decode cell's time depend on the work before it (scripts/probe_heat.py: kbit.gemm and cuBLAS at
# M = 1 fresh, after 3 s of cuBLAS at M = 1024, after idle pauses; SM clock and power)? kbit.gemm at
# M = 1-16 alone on the Llama-3 shapes (no heavy cells before them); then the first part of the GPU suite
# on the H200 (test files before test_fuzz.py). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
python3 -c "import kbit; print(kbit._C.gemm_dispatch(1, 5120, 2048, 4), kbit._C.gemm_dispatch(16, 5120, 2048, 5))"
timeout 90 python3 scripts/probe_heat.py --shape llama8b_gu --rounds 2 --out $R/heat.json > $R/heat.log 2>&1
echo "heat rc=$?"; cat $R/heat.log | grep -v Warn | tail -16
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu,Q --ms 1,4,8,16 --ks 4 \
  --out $R/gemm-small > $R/gemm-small.log 2>&1; echo "gemm-small rc=$?"; grep "k=4" $R/gemm-small.log | tr -s ' ' | tr '\n' ';'; echo
files=$(ls tests/test_*.py | awk '$0 < "tests/test_fuzz.py"')
timeout ${TESTS_S:-400} python3 -m pytest $files -q --maxfail=10 > $R/tests-part1.log 2>&1
tail -1 $R/tests-part1.log; grep -E "^(FAILED|ERROR)" $R/tests-part1.log | head -8
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
