#!/usr/bin/env bash
# Session 32, device run 5: per-CTA traces (scripts/wgmma_trace_patch.py builds, carried: exp_variants/trace = the
# x-peers build fe05f41, exp_variants/trace2 = the y-tile epilogue c25e133), unpaired, alternating, on the cells whose
# epilogue changed: the split reduction at 16-128 tokens and splits = 1 at 128.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p $OUT; R=/tmp/s32/r${RUN:-5}; mkdir -p $R; export PYTHONUNBUFFERED=1
so=_C.cpython-312-x86_64-linux-gnu.so
for v in trace trace2; do mkdir -p /tmp/v_$v && cp -r kbit /tmp/v_$v/ && xz -dc exp_variants/$v/$so.xz > /tmp/v_$v/kbit/$so; done
for v in trace trace2 trace_b trace2_b; do
  b=${v%_b}
  PYTHONPATH=/tmp/v_$b:$(pwd) timeout 100 python3 scripts/probe_wgmma_trace.py --shapes down,Q,gateup,glm_shared_gu,llama8b_gu \
    --ms 16,32,128 --aid wgmma_x_peers=1 --out $R/$v.json > $R/$v.log 2>&1
  echo "$v rc=$?"
done
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
keys = ["table->group0_full", "partials+cluster_sync", "reduction", "final_barrier", "y_stores(+peer barrier)", "total"]
rows = {}
for v in ("trace", "trace2", "trace_b", "trace2_b"):
    for r in json.load(open(os.path.join(R, v + ".json"))):
        rows.setdefault((r["shape"], r["M"]), {})[v] = r
print("| shape | M | plan | " + " | ".join(f"{k} old / new" for k in keys) + " | span us old / new |")
print("|---|---|---|" + "---|" * (len(keys) + 1))
for (s, M), c in rows.items():
    p = c["trace"]["plan"]
    cells = []
    for k in keys:
        o = [c[v]["intervals_cycles_median_max"].get(k, [float("nan")])[0] for v in ("trace", "trace_b") if v in c]
        n = [c[v]["intervals_cycles_median_max"].get(k, [float("nan")])[0] for v in ("trace2", "trace2_b") if v in c]
        cells.append(f"{min(o):.0f} / {min(n):.0f}")
    so = min(c[v]["span_us"] for v in ("trace", "trace_b")); sn = min(c[v]["span_us"] for v in ("trace2", "trace2_b"))
    print(f"| {s} | {M} | {p['tokens']}x{p['row_tiles']} s{p['splits']} | " + " | ".join(cells) + f" | {so:.2f} / {sn:.2f} |")
PY
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
