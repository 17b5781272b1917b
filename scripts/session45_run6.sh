#!/usr/bin/env bash
# Session 45, device run 6: (1) session 44's open question, the wgmma op at single-wave 128-token calls (Qwen3 down,
# O, Q, gate/up at M = 128-1024), main's build against session 43's (7f983db, before the persistent loop), the two
# builds alternating in four processes (A B A B); (2) compute-sanitizer racecheck and synccheck on the wgmma split
# cases with persistent CTAs (sanitize_cases.py wgmma-splits 2,3: M = 100, 130), which session 44 did not run.
# Session 43's build travels in .s43/ (its kbit package and extension, git-ignored).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
xz -d -k -f .s43/kbit/_C.cpython-312-x86_64-linux-gnu.so.xz
SH=down,O,Q,gateup; MS=128,256,384,512,768,1024
for r in 1 2; do
  timeout 100 python3 scripts/probe_wgmma_build_ab.py --shapes $SH --ms $MS --label main$r --out $OUT/ab-main$r.json \
    > $OUT/ab-main$r.log 2>&1; echo "main$r rc=$?"
  PYTHONPATH=$(pwd)/.s43:$(pwd) timeout 100 python3 scripts/probe_wgmma_build_ab.py --shapes $SH --ms $MS --label s43-$r \
    --out $OUT/ab-s43-$r.json > $OUT/ab-s43-$r.log 2>&1; echo "s43-$r rc=$?"
done
python3 - <<'PY'
import json, os
o = os.environ.get("OUT", "out")
runs = {n: {(r["shape"], r["M"]): r["us"] for r in json.load(open(f"{o}/ab-{n}.json"))["rows"]}
        for n in ("main1", "main2", "s43-1", "s43-2")}
print("| shape | M | main 1 | main 2 | s43 1 | s43 2 | main / s43 (medians of 2) |")
for key in runs["main1"]:
    m = [runs["main1"][key], runs["main2"][key]]; s = [runs["s43-1"][key], runs["s43-2"][key]]
    print(f"| {key[0]} | {key[1]} | {m[0]:.2f} | {m[1]:.2f} | {s[0]:.2f} | {s[1]:.2f} | {sum(m) / sum(s):.3f} |")
PY
for tool in racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits 2,3 > $OUT/$tool-wgmma-splits.log 2>&1
  echo "$tool rc=$?"; tail -3 $OUT/$tool-wgmma-splits.log | cut -c1-300
done
