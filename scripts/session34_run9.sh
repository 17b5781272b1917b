#!/usr/bin/env bash
# Session 34, device run 9 (carried builds: ff27c70's, and exp_variants/nolb = the same but x_image_kernel without
# __launch_bounds__(1024), as in runs 2-4): run 7 read Qwen3 O / down at M = 96-128 with the pass in CTAs of 512 + PDL
# 0.9 us slower than runs 3-4 on b6773bf's build; the rule against the pass forced to 256 with each build, alternating,
# two rounds; then every other test file and benchmarks/tests (run 8's command).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
so=kbit/_C.cpython-312-x86_64-linux-gnu.so
cp $so /tmp/main.so; xz -d -c exp_variants/nolb/_C.cpython-312-x86_64-linux-gnu.so.xz > /tmp/nolb.so
for round in 1 2; do
  for b in main nolb; do
    cp /tmp/$b.so $so
    timeout 60 python3 scripts/probe_wgmma_configs.py --shapes O,down --ms 96,128 --row-tiles 0 --splits 0 --staging 0 \
      --image-threads 256 --out $R/ab-$b-r$round.json > $R/ab-$b-r$round.log 2>&1; echo "$b r$round rc=$?"
    grep -E "rule|t256" $R/ab-$b-r$round.log | sed -E "s/  plan .*//"
  done
done
cp /tmp/main.so $so
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn)\.py")
timeout 420 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
