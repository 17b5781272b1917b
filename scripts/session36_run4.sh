#!/usr/bin/env bash
# Session 36, device run 4 (run twice on one warm machine: RUN=4a on main's v4 tree, RUN=4b on e5f6fa2, session 35's
# main, with that tree's build): an A/B of the GEMV cells session 36 read slower (Llama-3 70B and 8B at M = 1, three
# rounds; Qwen3 gate/up and GLM shared gate/up at M = 8) and the tiled dequantize; on v4 (4a) also the first stage
# alone against all stages at once with x by TMA and the dispatch table re-tuned. Both: kbit.gemm at k = 2, 3, 5, PDL
# after an elementwise kernel (bench_pdl), the host time of an eager call.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
for i in 1 2 3; do
  timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama70b_gu,llama8b_gu --ms 1 --ks 4 --out $R/m1-r$i \
    > $R/m1-r$i.log 2>&1; echo "m1 round $i rc=$?"
done
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu --ms 8 --ks 4 --out $R/m8 > $R/m8.log 2>&1
echo "m8 rc=$?"
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q,llama8b_gu --ms 64 2>&1 | grep -v -i warn > $R/probe-dequant.log
cut -c1-200 $R/probe-dequant.log
timeout 120 python3 -m benchmarks.bench_pdl --shapes Q,gateup,llama8b_gu --ms 64,128 --reps 2 --out $R/pdl > $R/pdl.log 2>&1
echo "pdl rc=$?"
# host time of an eager call (the tensor map is encoded per call; the old tree launched the image pass): 3000 calls
# of Qwen3 KV at M = 64 (wgmma), 1 (GEMV) back to back, wall time / call (above the GPU time where the host bounds)
timeout 60 python3 - > $R/host.log 2>&1 <<'PY'
import time, torch, kbit
from benchmarks import shapes as S
for M in (64, 1):
    sh = S.SHAPES["KV"]
    w = torch.randn(sh.N, sh.K, device="cuda", dtype=torch.float16)
    qw = kbit.quantize(w, 4)
    x = torch.randn(M, sh.K, device="cuda", dtype=torch.float16)
    for _ in range(200): kbit.gemm(x, qw)
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(3000): kbit.gemm(x, qw)
    torch.cuda.synchronize(); print(f"KV M={M} eager {1e6 * (time.perf_counter() - t) / 3000:.2f} us/call")
PY
cat $R/host.log | tail -3
for k in 2 3 5; do
  timeout 80 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,KV,llama8b_gu --ms 1,16,64,128 --ks $k \
    --out $R/gemm-k$k > $R/gemm-k$k.log 2>&1; echo "k$k rc=$?"
done
if [ "${RUN:-4}" = 4a ]; then
  timeout 120 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu,llama8b_gu --ms 16,64,128 \
    --splits 0 --row-tiles 0 --alone 1,2 --out $R/alone.json > $R/alone.log 2>&1; echo "alone rc=$?"
  mkdir -p $R/tune; timeout 200 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; echo "tune rc=$?"
  tail -2 $R/tune.log | cut -c1-300
fi
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
