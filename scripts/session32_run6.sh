#!/usr/bin/env bash
# Session 32, device run 6 (carried build: the first stage alone as a tuning aid): its tests and the wgmma tests, then the
# wgmma op with every stage requested at the start (a1) against the first stage alone (a2), the rule's shape and splits,
# image form forced, seven shapes, M = 16-256, two alternating rounds.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -k "wgmma" -x -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E  |passed|failed" $R/tests.log | head -12 | cut -c1-300
for v in r1 r2; do
  timeout 150 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 16,32,64,128,256 --row-tiles 0 --splits 0 --staging 2 --alone 1,2 --out $R/alone-$v.json > $R/alone-$v.log 2>&1
  echo "$v rc=$?"
done
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
t = {}
for v in ("r1", "r2"):
    for r in json.load(open(os.path.join(R, f"alone-{v}.json")))["rows"]:
        t.setdefault((r["shape"], r["M"]), {}).setdefault(r["config"], []).append((r["us"], r.get("plan")))
print("| shape | M | fp16 | all at the start | first stage alone | alone / all | plan |")
print("|---|---|---|---|---|---|---|")
for (s, M), c in t.items():
    f = min(u for u, _ in c["fp16"]); a1 = min(u for u, _ in c["rt0 s0 x2 a1"]); a2 = min(u for u, _ in c["rt0 s0 x2 a2"])
    p = c["rt0 s0 x2 a2"][0][1]
    print(f"| {s} | {M} | {f:.2f} | {a1:.2f} | {a2:.2f} | {a2 / a1:.3f} | {p['tokens']}x{p['row_tiles']} s{p['splits']} |")
PY
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
