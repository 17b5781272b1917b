#!/usr/bin/env bash
# Session 25, device run 7 (carried build of f647ca6): the wgmma op at M = 192-1024 with the K-splits forced
# (kbit._C._set_wgmma_splits: 1-4) against the split model's pick, on the Qwen3 / GLM / Llama-3 8B shapes: does
# a split count that takes more, shorter CTA waves win where one split leaves a partial second wave? Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
python3 -c "
import kbit
for name, (N, K) in dict(Q=(4096, 2048), O=(2048, 4096), gateup=(5120, 2048), down=(2048, 5120), glm_gu=(10240, 2048), glm_dn=(2048, 10240), l8b=(14336, 4096)).items():
    print(name, [(M, kbit._C._wgmma_launch_plan(M, N, K, 4)['splits'], kbit._C._wgmma_launch_plan(M, N, K, 4)['ctas']) for M in (192, 256, 384, 512, 768, 1024)])" > $R/plans.log 2>&1
cat $R/plans.log
for s in 0 1 2 3 4; do
  timeout 100 python3 -c "import sys, kbit; kbit._C._set_wgmma_splits($s); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu','--ms','192,256,384,512,768,1024','--ks','4','--out','$R/splits$s']; ab_paths.main()" > $R/splits$s.log 2>&1
  echo "== splits $s: $(grep "k=4" $R/splits$s.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //; s/ us//' | tr '\n' ';')"
done
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
