#!/usr/bin/env bash
# Session 25, device run 1 (carried build of main 78870d6): above M = 128 the dispatcher takes dequantize +
# cuBLAS on every shape (the table's grid ends at 128). The wgmma op and dequantize + cuBLAS against cuBLAS
# fp16 at M = 128-1024 on every dense benchmark shape, and the wgmma plans there. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
python3 -c "
import kbit
for name, (N, K) in dict(KV=(512, 2048), Q=(4096, 2048), O=(2048, 4096), gateup=(5120, 2048), down=(2048, 5120), l8b=(14336, 4096), l70b=(28672, 8192)).items():
    print(name, [(M, kbit._C._wgmma_launch_plan(M, N, K, 4)) for M in (128, 256, 512, 1024)])" > $R/plans.log 2>&1
timeout 420 python3 -m benchmarks.ab_paths --ops wgmma_gemm,dequant_cublas_gemm \
  --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 128,192,256,384,512,768,1024 --ks 4 --out $R/large > $R/large.log 2>&1
echo "rc=$?"; grep "k=4" $R/large.log | tr -s ' '
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
