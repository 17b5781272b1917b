#!/usr/bin/env bash
# Session 29, device run 5 (carried build): 5-8 rows x resident at 2 ring stages (this build's rule) against 3 and 4
# (the resident stages aid) on the four shapes where the rule takes x resident, k = 4, and 8B at k = 2, 3; then
# benchmarks.tune_dispatch on the full grid (the H200's table with session 28-29's GEMV rules).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
for k in 4 3 2; do
  shapes=llama8b_gu; [ $k = 4 ] && shapes=llama8b_gu,llama70b_gu,gateup,glm_shared_gu
  timeout 60 python3 scripts/probe_gemv_launch.py --shapes $shapes --ms 5,8 --k $k \
    --settings 1:1,1:1:1:3,1:1:1:4 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
start=$(date +%s); mkdir -p $R/tune
timeout ${TUNE_S:-450} python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$? in $(( $(date +%s) - start )) s"; ls $R/tune; tail -1 $R/tune.log | cut -c1-200
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
