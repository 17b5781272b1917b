#!/usr/bin/env bash
# Session 18, device run 5 (carried build: the wgmma kernel with x staged by its producers only
# where every CTA's groups fit in its stages, else the image pass and bulk copies as before; K-splits
# as clusters; ab_base/ = main 9d271ef): the op against the base (twice), both ways of x forced on
# three shapes (the rule's check), the wgmma tests, then — if 70B M = 128 is within 5% of the base —
# the dispatch sweep (benchmarks.tune_dispatch, its table under $R/tune); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r5; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes gateup,down,Q,O,KV,llama8b_gu,llama70b_gu --ms 16,32,64,128 --ks 4"
for rep in 1 2; do
  (cd ab_base && timeout 120 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | tr '\n' ';'; echo
  timeout 120 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | tr '\n' ';'; echo
done
for mode in 1 2; do
  timeout 60 python3 -c "import sys, kbit; kbit._C._set_wgmma_x_staging($mode); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','gateup,down,llama8b_gu','--ms','16,64,128','--ks','4','--out','$R/xmode-$mode']; ab_paths.main()" > $R/xmode-$mode.log 2>&1
  echo "== x staging mode $mode"; grep "k=4" $R/xmode-$mode.log | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1; tail -3 $R/tests-wgmma.log
b=$(grep "llama70b_gu.*M= 128" $R/ab-base-1.log | awk '{print $(NF-1)}'); n=$(grep "llama70b_gu.*M= 128" $R/ab-new-1.log | awk '{print $(NF-1)}')
if python3 -c "import sys; sys.exit(0 if float('$n') <= 1.05 * float('$b') else 1)"; then
  mkdir -p $R/tune; timeout 260 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -2 $R/tune.log | cut -c1-300
else echo "== no tune: 70B M=128 new $n vs base $b"; fi
tar -czf $OUT/run5.tar.gz -C $R .
