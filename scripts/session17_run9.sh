#!/usr/bin/env bash
# Session 17, device run 9 (carried build: the wgmma kernel with 4 producer warps, each issuing a
# quarter of a stage's bulk copies): the op's timings first (Llama-3 8B / 70B gate/up, Qwen3 gate/up and
# down, M = 16-128; compare runs 1, 5, 6 on other machines of the same kind), then the wgmma tests;
# tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r9; mkdir -p $R; start_device_run || exit 1
for rep in 1 2; do
  timeout 60 python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes llama8b_gu,llama70b_gu,gateup,down \
    --ms 16,32,64,128 --ks 4 --out $R/ab-$rep > $R/ab-$rep.log 2>&1
  echo "== rep $rep"; grep -E "^\| 4 |^## " $R/ab-$rep/*.md | awk -F'|' '/^##/{printf "\n%s: ", $0} /^\|/{printf "M=%s %s; ", $3, $5}'; echo
done
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -2 $R/tests-wgmma.log
tar -czf $OUT/run9.tar.gz -C $R .
