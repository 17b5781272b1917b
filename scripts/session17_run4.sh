#!/usr/bin/env bash
# Session 17, device run 4 (carried build: stream-K with the consumer loop's descriptors back on the
# uniform datapath; run 3's build computed them per step in regular registers, ~20% more instructions
# per step): the wgmma op's timings first (before any test heats the GPU), Llama-3 8B gate/up at
# M = 16 / 64 / 128 and 70B at 16 / 128, with stream-K off, the rule, and forced 56 / 84 / 112 CTAs (one
# process each); then the wgmma tests of test_cuda_gemm.py; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r4; mkdir -p $R; start_device_run || exit 1
ab() {  # mode shapes ms
  timeout 120 python3 -c "import kbit; kbit._C._set_wgmma_stream_k($1)
from benchmarks import ab_paths
ab_paths.main(['--ops', 'wgmma_gemm', '--shapes', '$2', '--ms', '$3', '--ks', '4', '--out', '$R/ab-$1-$2'])" \
    > $R/ab-$1-$2.log 2>&1
  echo "== stream-K mode $1: $(grep -E '^\| 4 ' $R/ab-$1-$2/*.md | awk -F'|' '{printf "M=%s %s; ", $3, $5}')"
}
for mode in -1 0 56 84 112; do ab $mode llama8b_gu 16,64,128; done
for mode in -1 0; do ab $mode llama70b_gu 16,128; done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma or stream_k" > $R/tests-wgmma.log 2>&1; tail -2 $R/tests-wgmma.log
tar -czf $OUT/run4.tar.gz -C $R .
