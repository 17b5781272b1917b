#!/usr/bin/env bash
# Session 32, device run 2: where the wgmma kernel's time goes with its copies taken out (experiment builds carried
# in exp_variants/, one a run (VARIANTS): nox = no x copies, now = no weight copies, nodata = neither; the results are wrong, the
# timings tell what each copy stream costs), against the x-peers build (unpaired), image form forced, M = 16-128.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
so=_C.cpython-312-x86_64-linux-gnu.so
for v in base ${VARIANTS:-nox now nodata}; do  # (the tree's 64 MiB cap carries one variant a run)
  pp=$(pwd)
  if [ $v != base ]; then
    [ -f exp_variants/$v/$so.xz ] || { echo "$v: not carried"; continue; }
    mkdir -p /tmp/v_$v && cp -r kbit /tmp/v_$v/ && xz -dc exp_variants/$v/$so.xz > /tmp/v_$v/kbit/$so; pp=/tmp/v_$v:$(pwd)
  fi
  PYTHONPATH=$pp timeout 100 python3 scripts/probe_wgmma_configs.py --shapes llama8b_gu,llama70b_gu,Q,gateup \
    --ms 16,64,128 --row-tiles 0 --splits 0 --staging 2 --peers 1 --out $R/$v.json > $R/$v.log 2>&1
  echo "$v rc=$?"
done
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
t = {}
for v in ("base", "nox", "now", "nodata"):
    f = os.path.join(R, v + ".json")
    if not os.path.exists(f): continue
    for r in json.load(open(f))["rows"]:
        if r["config"] == "rt0 s0 x2 p1":
            t.setdefault((r["shape"], r["M"]), {})[v] = (r["us"], r.get("plan"))
        elif r["config"] == "fp16" and v == "base":
            t.setdefault((r["shape"], r["M"]), {})["fp16"] = (r["us"], None)
print("| shape | M | fp16 | base | no x copies | no weight copies | neither | plan |")
print("|---|---|---|---|---|---|---|---|")
for (s, M), c in t.items():
    p = c.get("base", (0, {}))[1] or {}
    cells = " | ".join(f"{c[v][0]:.2f}" if v in c else "-" for v in ("fp16", "base", "nox", "now", "nodata"))
    print(f"| {s} | {M} | {cells} | {p.get('tokens')}x{p.get('row_tiles')} s{p.get('splits')} ctas {p.get('ctas')} |")
PY
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
