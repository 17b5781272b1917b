#!/usr/bin/env bash
# Session 23, device run 4 (carried build: run 3's kernels with run 3's re-measured dispatch table):
# kbit.gemm against cuBLAS fp16 at M = 1-128 on every dense benchmark shape (the numbers of record),
# forced K-splits of the wgmma kernel at M = 96 / 128 on Q, O and down; then test_cuda_gemm.py whole. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
grep "k=4" $R/gemm.log | tr -s ' ' | sed 's/ gemm//; s/k=4 //' | tr '\n' ';'; echo
for sp in 2 3 4 6 8; do  # the split model's pick at M = 96-128 against forced counts (Q, O, down; x by the rule)
  timeout 60 python3 -c "import sys, kbit; kbit._C._set_wgmma_splits($sp); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','Q,O,down','--ms','96,128','--ks','4','--out','$R/splits-$sp']; ab_paths.main()" > $R/splits-$sp.log 2>&1
  echo "== splits $sp: $(grep "k=4" $R/splits-$sp.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';')"
done
timeout 300 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -1 $R/tests-cuda-gemm.log
grep -E "^(FAILED|ERROR)" $R/tests-cuda-gemm.log | head -8
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
