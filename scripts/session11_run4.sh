#!/usr/bin/env bash
# Session 11, device run 4: build with the GEMV's mma decode as the default, regenerate the dispatch
# table (tune_dispatch), rebuild with it, the dispatch and GEMV tests, the grouped sweep
# (tune_grouped, the GEMV's auto decode) and the goal benchmarks (benchmarks.run, all columns).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
. scripts/gpu_build.sh
build_tree "$(pwd)" "$OUT/build.log" || exit 1
tune_and_rebuild "$OUT/tune"
timeout 150 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py -q -x -k "dispatch or table or gemv or opcheck or compile" 2>&1 | tail -3
timeout 100 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,16,64,256 --per-expert 1,2,4 --out "$OUT/grouped" > "$OUT/grouped.log" 2>&1; grep "E=" "$OUT/grouped.log"
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4,8,16 --out "$OUT/results" > "$OUT/results.log" 2>&1; tail -40 "$OUT/results.log"
