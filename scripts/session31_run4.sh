#!/usr/bin/env bash
# Session 31, device run 4 (carried build: main's): x staged against the image pass at the rule's CTA shape and splits,
# every wgmma shape, M = 9-128 (run 3: the image won at M = 40-64 on the Qwen3 shapes where the rule stages x).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 280 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,KV,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 9,16,24,32,40,48,64,96,128 --row-tiles 0 --splits 0 --staging 1,2 --out $R/staging.json > $R/staging.log 2>&1
echo "staging rc=$?"
python3 - $R/staging.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = {}
for r in d["rows"]:
    t.setdefault((r["shape"], r["M"]), {})[r["config"]] = (r["us"], r.get("plan"))
print("| shape | M | fp16 | rule | staged | image | rule's plan |")
print("|---|---|---|---|---|---|---|")
for (s, M), c in t.items():
    p = c.get("rule", (0, {}))[1] or {}
    print(f"| {s} | {M} | {c['fp16'][0]:.2f} | {c['rule'][0]:.2f} | {c['rt0 s0 x1'][0]:.2f} | {c['rt0 s0 x2'][0]:.2f} | "
          f"{p.get('tokens')}x{p.get('row_tiles')} s{p.get('splits')} {'staged' if p.get('x_staged') else 'image'}"
          f"{' pdl' if c['rt0 s0 x2'][1].get('image_pdl') else ''} |")
PY
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
