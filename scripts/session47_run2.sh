#!/usr/bin/env bash
# Session 47, device run 2: the x-resident GEMV's CTA at 5-16 rows by measurement (run 1: Qwen3 gate/up M = 8 at 8 warps
# per unit 5.09 us against the rule's 4, 5.75; Q M = 16 at 4 warps per unit and 3 stages 4.67 against 5.03). gemv_gemm
# with x resident where it fits (XRES 2) at every warps per unit (2, 4, 8), most unit slots (1, 2, 4) and ring stages
# (2, 3, 4), against the rule and x staged; k = 4 on five shapes, then k = 2 and 3 on three at M = 8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SET=1:1,1:1:0
for uw in 2 4 8; do for us in 1 2 4; do for st in 2 3 4; do SET=$SET,1:1:2:$st:$us:$uw; done; done; done
timeout 330 python3 scripts/probe_gemv_launch.py --shapes gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu --ms 5,8,12,16 \
  --settings $SET --reps 2 --out $OUT/k4 > $OUT/k4.log 2>&1; echo "k4 rc=$?"
for k in 2 3; do
  timeout 100 python3 scripts/probe_gemv_launch.py --shapes gateup,glm_shared_gu,llama8b_gu --ms 8 --k $k \
    --settings $SET --reps 2 --out $OUT/k$k > $OUT/k$k.log 2>&1; echo "k$k rc=$?"
done
