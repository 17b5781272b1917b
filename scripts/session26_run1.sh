#!/usr/bin/env bash
# Session 26, device run 1 (carried build of main 6e8b14d, the H100 table): first look at the H200 the
# device tool now lends. The GPU's identity; benchmarks.tune_dispatch on the full grid (the H200's own
# crossovers); kbit.gemm against cuBLAS fp16 at M = 1-1024 on 9 dense shapes with the H100 table (which the
# H200 matches: sm_90, 132 SMs). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
{ nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version --format=csv
  python3 -c "import torch, kbit; p = torch.cuda.get_device_properties(0); print(p); print(kbit._C.gemm_dispatch(1, 5120, 2048, 4))"
} > $R/device.txt 2>&1; cat $R/device.txt
start=$(date +%s)
mkdir -p $R/tune; timeout ${TUNE_S:-420} python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$? in $(( $(date +%s) - start )) s"; tail -1 $R/tune.log | cut -c1-200
timeout ${GEMM_S:-140} python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128,192,256,384,512,768,1024 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
echo "gemm rc=$?"
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
