#!/usr/bin/env bash
# Session 23, device run 3 (carried build: the CTA-shape rule, wgmma_plan, and the split model counting
# whole groups per split): the op under the rule against four warpgroups forced (main's kernel shape)
# on every Qwen3 / GLM / Llama-3 shape at M = 40-128; the wgmma tests and the plan query's; then the
# dispatch table re-measured with these kernels (benchmarks.tune_dispatch into $R/tune). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
ab() {  # ab ROW_TILES NAME
  timeout 150 python3 -c "import sys, kbit; kbit._C._set_wgmma_row_tiles($1); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu','--ms','40,48,64,96,128','--ks','4','--out','$R/$2']; ab_paths.main()" > $R/$2.log 2>&1
  echo "== row tiles $1 ($2)"; grep "k=4" $R/$2.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
}
ab 0 rule; ab 16 rt16
timeout 120 python3 -c "
import kbit
for N, K in ((4096, 2048), (2048, 4096), (5120, 2048), (2048, 5120), (10240, 2048), (2048, 10240), (14336, 4096), (28672, 8192)):
    print(N, K, [(M, kbit._C._wgmma_launch_plan(M, N, K, 4)) for M in (40, 64, 128)])" > $R/plans.log 2>&1; cat $R/plans.log | cut -c1-600
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1
tail -1 $R/tests-wgmma.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma.log | head -8
mkdir -p $R/tune; timeout 300 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -2 $R/tune.log | cut -c1-300
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
