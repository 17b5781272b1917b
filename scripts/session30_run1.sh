#!/usr/bin/env bash
# Session 30, device run 1 (carried build): the wgmma kernel at M = 40-128 with its token chunk forced
# (kbit._C._set_wgmma_tokens: 32 = four warpgroups on 256 rows x chunks of 32 tokens, 64 = chunks of 64 by the
# M = 33-64 row-tiles rule) against the rule, on the Qwen3 / GLM / Llama-3 8B shapes: does the shape that runs
# M = 32 in ~7 us on Qwen3 sizes beat the 64- and 128-token shapes at M = 40-128 when run as 2-4 chunks?
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s30; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
SHAPES=Q,O,gateup,down,KV,glm_shared_gu,glm_shared_dn,llama8b_gu
python3 -c "
import kbit
shapes = dict(Q=(4096, 2048), O=(2048, 4096), gateup=(5120, 2048), down=(2048, 5120), KV=(512, 2048),
              glm_gu=(10240, 2048), glm_dn=(2048, 10240), l8b=(14336, 4096))
for t in (0, 32, 64):
    kbit._C._set_wgmma_tokens(t)
    for name, (N, K) in shapes.items():
        print('tokens', t, name, [(M, *(kbit._C._wgmma_launch_plan(M, N, K, 4)[key] for key in ('tokens', 'row_tiles', 'splits', 'x_staged', 'ctas'))) for M in (40, 64, 96, 128)])
kbit._C._set_wgmma_tokens(0)" > $R/plans.log 2>&1
cat $R/plans.log
for t in 0 32 64; do
  ops=wgmma_gemm; [ $t = 0 ] && ops=gemm,wgmma_gemm
  timeout 150 python3 -c "import sys, kbit; kbit._C._set_wgmma_tokens($t); from benchmarks import ab_paths; sys.argv=['x','--ops','$ops','--shapes','$SHAPES','--ms','40,64,96,128','--ks','4','--out','$R/tokens$t']; ab_paths.main()" > $R/tokens$t.log 2>&1
  echo "== tokens $t rc=$?"; grep -hE "^## |^\| 4 \|" $R/tokens$t/*.md | tr -s " " | paste -sd" " | sed "s/## /\n/g"
done
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
