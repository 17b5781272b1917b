#!/usr/bin/env bash
# Session 17, device run 6 (carried build: the wgmma kernel's first stages requested one at a time,
# tuning aid _set_wgmma_ramp_fills; the GEMV's launch plan remembered per shape): the wgmma op's
# timings with the ramp off and on, twice each (one process each, before any test heats the GPU);
# the host cost per call (bench_dispatch); then tests/test_cuda_gemm.py whole; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r6; mkdir -p $R; start_device_run || exit 1
i=0
for on in False True False True; do
  i=$((i + 1))
  timeout 150 python3 -c "import kbit; kbit._C._set_wgmma_ramp_fills($on)
from benchmarks import ab_paths
ab_paths.main(['--ops', 'wgmma_gemm', '--shapes', 'llama8b_gu,llama70b_gu,gateup,down', '--ms', '16,32,64,128',
               '--ks', '4', '--out', '$R/ab-ramp-$i-$on'])" > $R/ab-ramp-$i-$on.log 2>&1
  echo "== ramp $on"; grep -E "^\| 4 |^## " $R/ab-ramp-$i-$on/*.md | awk -F'|' '/^##/{printf "\n%s: ", $0} /^\|/{printf "M=%s %s; ", $3, $5}'; echo
done
timeout 60 python3 -m benchmarks.bench_dispatch --out $R/dispatch > $R/dispatch.log 2>&1
grep -E "kbit.gemm  |gemm_direct  |torch.add\(x" $R/dispatch.log
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
tar -czf $OUT/run6.tar.gz -C $R .
