#!/usr/bin/env bash
# Session 36, device run 1 (branch v4: tiled layout version 4; the mma.sync kernels' x by ldmatrix.x4; the wgmma
# kernel's x straight from x by TMA, no image pass): a wgmma smoke test first (a TMA byte-count error would hang),
# kbit.gemm against cuBLAS fp16 (k = 4, session 35 run 6's eight shapes), the tiled dequantize (session 31 run
# 12's probe), then test_cuda_gemm.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 90 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "wgmma_gemm_forced_splits and 4 and float16" > $R/smoke.log 2>&1
rc=$?; echo "smoke rc=$rc"; grep -E "^FAILED|^E |passed|failed" $R/smoke.log | head -12 | cut -c1-300
if [ $rc -eq 0 ]; then
  timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 1,4,8,16,32,40,48,64,96,128,256 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
  python3 scripts/ab_table.py v4=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
fi
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q,llama8b_gu --ms 64 2>&1 | grep -v -i warn > $R/probe-dequant.log
cut -c1-200 $R/probe-dequant.log
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -q -x > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
