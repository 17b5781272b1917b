#!/usr/bin/env bash
# Session 45, device run 4: warps per SM at balanced work (run 3's kSlots layout lost on a static tail: 896 tiles over
# 792 slots). N chosen so that every slot of each form gets the same units: 50688 x 4096 (3168 tiles: the rule's 528
# 4-warp CTAs 6 each, kSlots 16 warps 528 slots 6 each, 24 warps 792 slots 4 each) and 25344 x 8192 (1584 tiles,
# 8-warp units: the rule's 264 CTAs 6 each, kSlots 24 warps 396 slots 4 each), M = 1, x staged.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
S="1,1:1:0,1:1:0:0:4:0:-1:1:1:2,1:1:0:0:8:0:-1:1:1:2,1:1:0:0:8:0:-1:1:1:3,1:1:0:0:2:0:-1:1:1:2"
timeout 200 python3 scripts/probe_gemv_launch.py --shapes 50688x4096,25344x8192 --ms 1 \
  --settings "$S" --reps 3 --out $OUT > $OUT/launch.log 2>&1; echo "launch rc=$?"; grep -E "^\|" $OUT/launch.log | cut -c1-250
python3 - <<'PY'
import json, os
d = json.load(open(os.environ.get("OUT", "out") + "/gemv-launch.json"))
for r in d["rows"]:
    for s, p in r["plans"].items():
        print(r["shape"], s, {k: p[k] for k in ("grid", "warps", "warps_per_unit", "ctas_per_sm", "staged_layout", "ring_stages", "x_resident")}, f"{r['us'][s]:.2f}")
PY
