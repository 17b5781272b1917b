#!/usr/bin/env bash
# Session 47, device run 4 (right after run 3, on its warm machine): the A/B of the x-resident GEMV's session 47 rules,
# main's build (ab_base/, carried) against run 3's (ab_new/, left by run 3), alternating, three rounds each; each
# process must import its own directory's kbit.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT=${OUT:-out}; mkdir -p $OUT; export PYTHONUNBUFFERED=1
xz -d -k -f ab_base/kbit/_C.cpython-312-x86_64-linux-gnu.so.xz
[ -f ab_new/kbit/__init__.py ] && [ -f ab_new/kbit/_C.cpython-312-x86_64-linux-gnu.so ] ||
  { echo "ab_new missing: the machine was not run 3's warm one"; exit 1; }
SH=gateup,Q,O,glm_shared_gu,llama8b_gu,llama70b_gu; MS=5,8,12,16
for r in 1 2 3; do
  for b in base new; do
    PYTHONPATH=$(pwd)/ab_$b:$(pwd) timeout 150 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes $SH \
      --ms $MS --ks 2,3,4,5 --label $b$r --out $OUT/ab-$b$r.json > $OUT/ab-$b$r.log 2>&1; echo "$b$r rc=$?"
    grep -q "kbit from $(pwd)/ab_$b/" $OUT/ab-$b$r.log || { echo "$b$r did not import ab_$b/'s kbit"; exit 1; }
  done
done
python3 - <<'PY'
import glob, json, os, statistics as st
rows = {}
for f in sorted(glob.glob(os.environ.get("OUT", "out") + "/ab-*.json")):
    d = json.load(open(f)); b = d["label"].rstrip("0123456789")
    for r in d["rows"]: rows.setdefault((r.get("k", 4), r["shape"], r["M"]), {}).setdefault(b, []).append(r["us"])
print("| k | shape | M | base (us) | new (us) | new / base |\n|---|---|---|---|---|---|")
for (k, s, m), v in rows.items():
    a, b = st.median(v.get("base", [0])), st.median(v.get("new", [0]))
    print(f"| {k} | {s} | {m} | {' / '.join(f'{x:.2f}' for x in v.get('base', []))} | "
          f"{' / '.join(f'{x:.2f}' for x in v.get('new', []))} | {b / a if a else 0:.3f} |")
PY
