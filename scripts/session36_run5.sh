#!/usr/bin/env bash
# Session 36, device run 5 (experiment build: the GEMV's x loaded a block ahead at every token count, not only 8+):
# the cells run 4's A/B found slower than session 35's main: Llama-3 70B and 8B at M = 1 (three rounds), and k = 2 / 5
# at M = 1 and 16 on five shapes (compare with run 4a / 4b's files).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
for i in 1 2 3; do
  timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama70b_gu,llama8b_gu --ms 1 --ks 4 --out $R/m1-r$i \
    > $R/m1-r$i.log 2>&1; echo "m1 round $i rc=$?"
done
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu --ms 8 --ks 4 --out $R/m8 > $R/m8.log 2>&1
for k in 2 5; do
  timeout 80 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,KV,llama8b_gu --ms 1,16,64,128 --ks $k \
    --out $R/gemm-k$k > $R/gemm-k$k.log 2>&1; echo "k$k rc=$?"
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
