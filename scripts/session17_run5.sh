#!/usr/bin/env bash
# Session 17, device run 5 (carried build: the wgmma kernel's row blocks start their K groups at
# rotated offsets, tuning aid _set_wgmma_rotate_groups): the wgmma op's timings with rotation off and
# on (one process each, before any test heats the GPU): Llama-3 8B and 70B gate/up, Qwen3 gate/up and
# down, M = 16-128; then the wgmma tests of test_cuda_gemm.py; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r5; mkdir -p $R; start_device_run || exit 1
for on in False True False True; do
  timeout 150 python3 -c "import kbit; kbit._C._set_wgmma_rotate_groups($on)
from benchmarks import ab_paths
ab_paths.main(['--ops', 'wgmma_gemm', '--shapes', 'llama8b_gu,llama70b_gu,gateup,down', '--ms', '16,32,64,128',
               '--ks', '4', '--out', '$R/ab-rotate-$on'])" > $R/ab-rotate-$on.log 2>&1
  echo "== rotation $on"; grep -E "^\| 4 |^## " $R/ab-rotate-$on/*.md | awk -F'|' '/^##/{printf "\n%s: ", $0} /^\|/{printf "M=%s %s; ", $3, $5}'; echo
  cp -r $R/ab-rotate-$on $R/ab-rotate-$on-$(date +%s)
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -2 $R/tests-wgmma.log
tar -czf $OUT/run5.tar.gz -C $R .
