#!/usr/bin/env bash
# Session 55, device run 7: kbit.gemm against cuBLAS fp16 at decode M (1, 4, 8, 12, 16) in the sustained regime
# (ab_paths --sustain 0.3), eight of the benchmark shapes, k = 4: #5's and #6's cells as a serving GPU runs them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --sustain 0.3 --ks 4 \
  --shapes Q,KV,O,down,gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,4,8,12,16 \
  --out $OUT/gemm-decode-sustained > $OUT/gemm-decode-sustained.log 2>&1; echo "gemm rc=$?"
python3 scripts/ab_table.py "session55=$OUT/gemm-decode-sustained" --path gemm > $OUT/gemm-decode-sustained-table.md
cat $OUT/gemm-decode-sustained-table.md
