#!/usr/bin/env bash
# Session 42, device run 3 (the final csrc: the fallback without the L2 discard, the table by the least worst loss):
# test_cuda_gemm.py's fallback and dispatch tests; kbit.gemm against cuBLAS fp16 at M = 192-4096 (k = 4, the
# benchmark's dense shapes but 70B).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -k "dequant or dispatch or table or prefill" \
  > $OUT/tests-gemm.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
timeout 250 python3 -m benchmarks.ab_paths --ops gemm \
  --shapes Q,O,gateup,down,KV,glm_shared_gu,glm_shared_dn,llama8b_gu \
  --ms 192,256,384,512,768,1024,1536,2048,3072,4096 --ks 4 --out $R/gemm-large > $R/gemm-large.log 2>&1
echo "gemm-large rc=$?"; tail -3 $R/gemm-large.log | cut -c1-300
python3 scripts/ab_table.py s42=$R/gemm-large --path gemm > $OUT/gemm-large-table.md; cat $OUT/gemm-large-table.md
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
