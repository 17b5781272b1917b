#!/usr/bin/env bash
# Session 26, device run 7 (carried build of 9a01cfe's sources): the dense GEMV at M = 1 and 4 with x resident in
# unit slots (one CTA per SM: one pair table and x image, 16 warps as 4 slots of 4 or 2 of 8, 3-4 ring stages: up
# to three items in flight per warp) against the rule (x staged, four 4-warp CTAs per SM, one item in flight per
# warp), and 8 warps per unit; scripts/probe_gemv_launch.py, 3 rounds; the plans. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
SETTINGS=1:1,1:1:2:4:4:4,1:1:2:3:4:4,1:1:2:4:2:8,1:1:2:3:2:4,1:1:1:0:8:8
python3 - $SETTINGS > $R/plans.log 2>&1 <<'PY'
import sys, kbit
for s in sys.argv[1].split(","):
    v = [int(p) for p in s.split(":")] + [1, 1, 0, 8, 0][len(s.split(":")) - 1:]
    kbit._C._set_gemv_x_resident(v[2]); kbit._C._set_gemv_resident_stages(v[3])
    kbit._C._set_gemv_max_unit_slots(v[4]); kbit._C._set_gemv_unit_warps(v[5])
    for shape in [(14336, 4096), (28672, 8192), (5120, 2048), (2048, 5120)]:
        p = kbit._C._gemv_launch_plan(1, *shape, 4, "mma")
        print(s, shape, {k: p[k] for k in ("x_resident", "ring_stages", "warps", "warps_per_unit", "ctas_per_sm", "grid")})
PY
cat $R/plans.log
timeout 150 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,down,Q,glm_shared_dn --ms 1,4 \
  --settings $SETTINGS --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
