#!/usr/bin/env bash
# Session 45, device run 7: compute-sanitizer racecheck (and memcheck) on the wgmma kernel's persistent CTAs
# (sanitize_cases.py wgmma-persistent: four launches; run 6's racecheck of the whole split cases 2-3 ran past 200 s);
# the wgmma configurations against the rule at Llama-3 8B / 70B gate/up M = 32, 64 (#6's M = 64 cell: 1.45x of 1.5x).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for tool in racecheck memcheck; do sanitize_run $tool 240 wgmma-persistent; done
timeout 150 python3 scripts/probe_wgmma_configs.py --shapes llama8b_gu,llama70b_gu --ms 32,64 \
  --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "configs rc=$?"
grep -E "rule|fp16" $OUT/configs.log | cut -c1-220
python3 - <<'PY'
import json, os
rows = json.load(open(os.environ.get("OUT", "out") + "/configs.json"))
rows = rows["rows"] if isinstance(rows, dict) else rows
best = {}
for r in rows:
    key = (r["shape"], r["M"])
    if r["config"] in ("fp16",) or "us" not in r:
        continue
    if key not in best or r["us"] < best[key]["us"]:
        best[key] = r
for key, r in best.items():
    print("fastest", key, r["config"], f"{r['us']:.2f}", r.get("plan"))
PY
