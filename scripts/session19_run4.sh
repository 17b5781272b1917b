#!/usr/bin/env bash
# Session 19, device run 4 (carried build: x items mapped 8 tokens x 4 blocks per warp; ab_base/ =
# main dd7833f, the early loads): the op against the base (twice), forced K-splits on the new build
# (the split model's check), the wgmma tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r4; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,O,KV,llama8b_gu --ms 16,32,48,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && timeout 100 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | tr '\n' ';'; echo
  timeout 100 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -1 $R/tests-wgmma.log
for s in 1 2 3 4 5 6 8; do
  timeout 80 python3 -c "import sys, kbit; kbit._C._set_wgmma_splits($s); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','gateup,down,Q,O,KV,llama8b_gu','--ms','16,32,48,64,96,128','--ks','4','--out','$R/splits-$s']; ab_paths.main()" > $R/splits-$s.log 2>&1
  echo "== splits $s"; grep "k=4" $R/splits-$s.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
done
tar -czf $OUT/run4.tar.gz -C $R .
