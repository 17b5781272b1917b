#!/usr/bin/env bash
# Session 47, device run 10 (right after run 9, on its warm machine): the A/B of the x-resident GEMV's late PDL wait,
# run 6's build (ab_base/, carried) against run 9's (ab_new/, left by run 9), alternating, three rounds each; each
# process must import its own directory's kbit. The per-process files stay on the machine (a run returns 8 files):
# $OUT/ab-all.json holds every round's rows, $OUT/ab.md the table.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-out}; mkdir -p $OUT; export PYTHONUNBUFFERED=1
A=/tmp/ab10; rm -rf $A; mkdir -p $A
xz -d -k -f ab_base/kbit/_C.cpython-312-x86_64-linux-gnu.so.xz
[ -f ab_new/kbit/__init__.py ] && [ -f ab_new/kbit/_C.cpython-312-x86_64-linux-gnu.so ] ||
  { echo "ab_new missing: the machine was not run 9's warm one"; exit 1; }
SH=gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu; MS=1,4,8,16
for r in 1 2 3; do
  for b in base new; do
    PYTHONPATH=$(pwd)/ab_$b:$(pwd) timeout 150 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes $SH \
      --ms $MS --label $b$r --out $A/ab-$b$r.json > $A/ab-$b$r.log 2>&1; echo "$b$r rc=$?"
    grep -q "kbit from $(pwd)/ab_$b/" $A/ab-$b$r.log || { echo "$b$r did not import ab_$b/'s kbit"; exit 1; }
  done
done
cat $A/ab-*.log > $OUT/ab-all.log
python3 - "$A" "$OUT" <<'PY'
import glob, json, statistics as st, sys
a_dir, out_dir = sys.argv[1], sys.argv[2]
runs = [json.load(open(f)) for f in sorted(glob.glob(a_dir + "/ab-*.json"))]
json.dump(runs, open(out_dir + "/ab-all.json", "w"), indent=1)
rows = {}
for d in runs:
    b = d["label"].rstrip("0123456789")
    for r in d["rows"]: rows.setdefault((r.get("k", 4), r["shape"], r["M"]), {}).setdefault(b, []).append(r["us"])
lines = ["| k | shape | M | base (us) | new (us) | new / base |", "|---|---|---|---|---|---|"]
for (k, s, m), v in rows.items():
    a, b = st.median(v.get("base", [0])), st.median(v.get("new", [0]))
    lines.append(f"| {k} | {s} | {m} | {' / '.join(f'{x:.2f}' for x in v.get('base', []))} | "
                 f"{' / '.join(f'{x:.2f}' for x in v.get('new', []))} | {b / a if a else 0:.3f} |")
open(out_dir + "/ab.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
