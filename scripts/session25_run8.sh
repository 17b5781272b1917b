#!/usr/bin/env bash
# Session 25, device run 8 (carried build of f647ca6; ab_base/ = main 78870d6's build): run 5 read the
# decode cells (the GEMV, unchanged code) 10-25% slower than session 24 did on Llama-3 and GLM sizes
# (8B M = 1 16.2 against 13.0 us). kbit.gemm, base vs new, on the same machine at M = 1-16, two rounds. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops gemm --shapes Q,gateup,glm_shared_dn,llama8b_gu,llama70b_gu --ms 1,4,8,16 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ gemm//; s/k=4 //; s/ us//' | tr '\n' ';'; echo; }
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=78870d6 timeout 80 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log)"
  timeout 80 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log)"
done
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
