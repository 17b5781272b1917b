#!/usr/bin/env bash
# Session 17, device run 1 (carried build of main): where the wgmma kernel's time goes at M = 16-128.
# ncu (stall reasons per issued instruction, the hottest SASS lines, speed of light, pipes) on
# wgmma_gemm for Llama-3 8B gate/up M = 16 / 64 and 70B M = 64; then the op's timings with the
# split model's choice and forced splits 1 / 2 (benchmarks.ab_paths); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s17; R=$LOGS/r1; mkdir -p $R; start_device_run || exit 1
for sp in "" 1 2; do
  KBIT_TUNE_CTA_SPLITS=$sp timeout 120 python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes llama8b_gu,llama70b_gu \
    --ms 16,32,64,128 --ks 4 --out $R/ab-splits${sp:-auto} > $R/ab-splits${sp:-auto}.log 2>&1
  echo "== splits ${sp:-auto}"; cat $R/ab-splits${sp:-auto}/*.md | grep -E "^\|" | head -20
done
SHAPES="8b_m64: --op wgmma_gemm --k 4 --M 64 --N 14336 --K 4096
8b_m16: --op wgmma_gemm --k 4 --M 16 --N 14336 --K 4096
70b_m64: --op wgmma_gemm --k 4 --M 64 --N 28672 --K 8192" \
  KERNEL=wgmma_gemm_kernel STALLS=1 SOURCE=1 OUT=$R timeout 300 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
cat $R/ncu-summary.log | cut -c1-160
tar -czf $OUT/run1.tar.gz -C $R .
