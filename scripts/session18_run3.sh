#!/usr/bin/env bash
# Session 18, device run 3 (carried build: run 2's kernel with x loaded into producer registers
# before a stage is free, and the split model counting the clusters a GPC holds; ab_base/ = main
# 9d271ef): the op against the base in one run (twice, alternating), forced splits on three
# shapes (the model's check), then the wgmma tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r3; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,Q,O,KV,llama8b_gu,llama70b_gu --ms 16,32,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && timeout 120 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | tr '\n' ';'; echo
  timeout 120 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
for sp in 1 2 3 4 6 8; do
  timeout 60 python3 -c "import sys, kbit; kbit._C._set_wgmma_splits($sp); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','gateup,down,llama8b_gu','--ms','16,64,128','--ks','4','--out','$R/splits-$sp']; ab_paths.main()" > $R/splits-$sp.log 2>&1
  echo "== splits $sp"; grep "k=4" $R/splits-$sp.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
tar -czf $OUT/run3.tar.gz -C $R .
