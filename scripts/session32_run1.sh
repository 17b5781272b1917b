#!/usr/bin/env bash
# Session 32, device run 1 (carried build: x peers, the experimental rule): the paired-row-block tests, then
# wgmma_gemm unpaired (p1) against paired (p2) at the rule's shape, splits and x form, seven shapes, M = 16-256.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "x_peers" -x -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E  |passed|failed" $R/tests.log | head -12 | cut -c1-300
timeout 240 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 16,32,40,64,96,128,256 --row-tiles 0 --splits 0 --staging 0 --peers 1,2 --out $R/peers.json > $R/peers.log 2>&1
echo "peers rc=$?"
python3 - $R/peers.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = {}
for r in d["rows"]:
    t.setdefault((r["shape"], r["M"]), {})[r["config"]] = (r["us"], r.get("plan"))
print("| shape | M | fp16 | rule | unpaired | paired | paired/unpaired | rule's plan |")
print("|---|---|---|---|---|---|---|---|")
for (s, M), c in t.items():
    p = (c.get("rule") or (0, {}))[1] or {}
    u, q = c.get("rt0 s0 x0 p1", (0,))[0], c.get("rt0 s0 x0 p2", (0,))[0]
    print(f"| {s} | {M} | {c['fp16'][0]:.2f} | {c.get('rule', (0,))[0]:.2f} | {u:.2f} | {q:.2f} | {q / u if u else 0:.3f} | "
          f"{p.get('tokens')}x{p.get('row_tiles')} s{p.get('splits')} {'staged' if p.get('x_staged') else 'image'} "
          f"peers {p.get('x_peers')} ctas {p.get('ctas')} |")
PY
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
