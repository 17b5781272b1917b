#!/usr/bin/env bash
# Session 26, device run 4 (carried build of 9a01cfe's sources: the H200's own table): the numbers of record on
# the H200, every sweep heaviest M first (a light cell never right after a heavy one). kbit.gemm against
# cuBLAS fp16 at M = 1-1024 on 9 dense shapes (k = 4); kbit.gemm at M = 1 and 4 for k = 2-5 on three shapes;
# the MoE sweep (grouped, 8 / 64 / 256 experts x 1 / 4 / 8 tokens, against fp16 bmm). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 190 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128,192,256,384,512,768,1024 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
echo "gemm rc=$?"
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,llama8b_gu,llama70b_gu --ms 1,4 --ks 2,3,4,5 \
  --out $R/gemm-ks > $R/gemm-ks.log 2>&1; echo "gemm-ks rc=$?"; grep "k=" $R/gemm-ks.log | tr -s ' ' | tr '\n' ';'; echo
timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-6 | tr -s ' ' | tr '\n' ';'; echo
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
