#!/usr/bin/env bash
# Session 35, device run 5 (main + the staged rule's cap of 2 groups a CTA): the wgmma plan / staging-rule tests; x
# staged against the image at M = 8-32 on six shapes at k = 2, 3, 4, 5 (the rule's plan, each form forced).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s35; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -k "staging_rule or launch_plan or first_stage_alone_rule" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed|Error" $R/tests.log | head -8 | cut -c1-300
SH=Q,gateup,O,down,KV,glm_shared_gu
for round in 1 2; do for k in 2 3 4 5; do
  timeout 100 python3 scripts/probe_wgmma_configs.py --k $k --shapes $SH --ms 8,16,24,32 --row-tiles 0 --splits 0 --staging 1,2 \
    --out $R/k$k-r$round.json > $R/k$k-r$round.log 2>&1; echo "k$k r$round rc=$?"
done; done
python3 - $R <<'PY' > $R/summary.md; cat $R/summary.md
import json, sys, collections
R = sys.argv[1]; best = collections.defaultdict(dict); plans = {}
for k in (2, 3, 4, 5):
    for r in (1, 2):
        try: rows = json.load(open(f"{R}/k{k}-r{r}.json"))["rows"]
        except Exception: continue
        for row in rows:
            cfg = {"rt0 s0 x1": "staged", "rt0 s0 x2": "image"}.get(row["config"], row["config"])
            key = (row["shape"], row["M"], k)
            best[key][cfg] = min(best[key].get(cfg, 1e9), row["us"])
            if cfg == "rule": plans[key] = row.get("plan", {})
print("| shape | M | k | fp16 | rule | staged | image | rule plan |\n|---|---|---|---|---|---|---|---|")
for (s, m, k), d in sorted(best.items()):
    p = plans.get((s, m, k), {}); g = lambda c: f"{d[c]:.2f}" if c in d else "-"
    print(f"| {s} | {m} | {k} | {g('fp16')} | {g('rule')} | {g('staged')} | {g('image')} | "
          f"t{p.get('tokens')} rt{p.get('row_tiles')} s{p.get('splits')} staged{int(bool(p.get('x_staged')))} |")
PY
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
