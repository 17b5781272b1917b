#!/usr/bin/env bash
# Session 38, device run 1 (main's csrc at ee3ee9d): the dispatch sweep past M = 1024 (issue 7: the table stopped at
# M = 1024, where wgmma beat the fallback at M = 2048 / 4096 on Qwen3 Q and gate/up in session 37's run 4), M = 384-4096,
# every benchmark shape and k; the light shapes and the Llama-3 shapes as two sweeps (a timeout loses one, not both).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s38; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
MS=384,512,768,1024,1536,2048,3072,4096
timeout 250 python3 -m benchmarks.tune_dispatch --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn --ms $MS \
  --out $R/tune-qwen > $R/tune-qwen.log 2>&1; echo "tune-qwen rc=$?"
timeout 250 python3 -m benchmarks.tune_dispatch --shapes llama8b_gu,llama70b_gu --ms $MS \
  --out $R/tune-llama > $R/tune-llama.log 2>&1; echo "tune-llama rc=$?"
grep -hE "M=(1024|2048|4096)" $R/tune-qwen.log $R/tune-llama.log | grep "k=4" | cut -c1-200
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
