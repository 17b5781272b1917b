#!/usr/bin/env bash
# Session 45, device run 3: the unit-slot layout (kSlots) in one CTA per SM of up to 24 warps at 80 registers against
# the rule (kSingle: four 4-warp CTAs or two 8-warp, 127 registers) at M = 1 and 4 (probe_gemv_launch, cold, three
# rounds): 16 / 20 / 24 warps (the unit-slot aid 4 / 5 / 8 at 4 warps a unit; 2 / 3 at 8), 2 and 3 ring stages; and the
# layout tests (bitwise against one unit per CTA, every k, both dtypes).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "staged_layout" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
S="1,1:1:1:0:4:0:-1:1:1:2,1:1:1:0:5:0:-1:1:1:2,1:1:1:0:8:0:-1:1:1:2,1:1:1:0:5:0:-1:1:1:3,1:1:1:0:8:0:-1:1:1:3"
S="$S,1:1:1:0:2:0:-1:1:1:2,1:1:1:0:8:4:-1:1:1:2"
timeout 300 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down,O,KV --ms 1,4 \
  --settings "$S" --reps 3 --out $OUT > $OUT/launch.log 2>&1; echo "launch rc=$?"; grep -E "^\|" $OUT/launch.log | cut -c1-250
