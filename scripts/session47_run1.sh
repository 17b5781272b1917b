#!/usr/bin/env bash
# Session 47, device run 1: where the GEMV at 5-16 rows loses on Qwen3 gate/up (#6: 1.39x at M = 8 where down, the
# same bytes, reads 2.26x). The rule's plans, then gemv_gemm under forced launch settings (probe_gemv_launch.py:
# SLOTS:SPREAD:XRES:STAGES:USLOTS:UWARPS:SPLIT) against the wgmma and tile kernels and cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
python3 - <<'PY'
import kbit
for name, N, K in (("gateup", 5120, 2048), ("Q", 4096, 2048), ("down", 2048, 5120), ("O", 2048, 4096)):
    for M in (4, 5, 8, 12, 16):
        print(name, M, dict(kbit._C._gemv_launch_plan(M, N, K, 4, "mma")))
    for M in (8, 16):
        print(name, M, "wgmma", dict(kbit._C._wgmma_launch_plan(M, N, K, 4, 0)))
    print(name, "dispatch", [kbit._C.gemm_dispatch(M, N, K, 4) for M in (5, 8, 12, 16)])
PY
SET=1:1,1:1:1:0:8:2,1:1:1:0:8:8,1:1:1:0:1,1:1:0,1:1:1:0:8:0:2,1:1:1:0:8:0:4,1:1:1:3,8:1,16:1
timeout 300 python3 scripts/probe_gemv_launch.py --shapes gateup,Q,down --ms 5,8,12,16 --settings $SET --reps 2 \
  --baselines fp16,wgmma,tile,mma --out $OUT > $OUT/launch.log 2>&1; echo "probe rc=$?"
grep "|" $OUT/launch.log
