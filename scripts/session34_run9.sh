#!/usr/bin/env bash
# Session 34, device run 9 (carried build: ff27c70's csrc without the image kernel's __launch_bounds__(1024), i.e. the
# pass's code of runs 2-4): run 7 read Qwen3 O / down at M = 96-128 with the pass in CTAs of 512 + PDL ~0.9 us slower
# than runs 3-4 did, measured right after its test files. The rule against the pass forced to 256 on those cells on a
# fresh machine (two rounds), every other test file and benchmarks/tests (run 8's command), the same A/B again after them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
ab() {
  timeout 60 python3 scripts/probe_wgmma_configs.py --shapes O,down --ms 96,128 --row-tiles 0 --splits 0 --staging 0 \
    --image-threads 256 --out $R/ab-$1.json > $R/ab-$1.log 2>&1; echo "ab $1 rc=$?"
  grep -E "rule|t256" $R/ab-$1.log | sed -E "s/  plan .*//"
}
ab before-r1; ab before-r2
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn)\.py")
timeout 420 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
ab after
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
