#!/usr/bin/env bash
# Session 32, device run 4 (carried build: the y-tile epilogue, c25e133): the wgmma tests, then the wgmma op at the rule's
# shape, splits and x form, unpaired (p1) and paired (p2), this build against the x-peers build before it (exp_variants/peers).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -k "wgmma" -x -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E  |passed|failed" $R/tests.log | head -12 | cut -c1-300
so=_C.cpython-312-x86_64-linux-gnu.so
mkdir -p /tmp/v_peers && cp -r kbit /tmp/v_peers/ && xz -dc exp_variants/peers/$so.xz > /tmp/v_peers/kbit/$so
for v in new base new2 base2; do  # alternating rounds
  pp=$(pwd); case $v in base*) pp=/tmp/v_peers:$(pwd);; esac
  PYTHONPATH=$pp timeout 150 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 16,32,64,128,256 --row-tiles 0 --splits 0 --staging 0 --peers 1,2 --out $R/$v.json > $R/$v.log 2>&1
  echo "$v rc=$?"
done
python3 - $R <<'PY'
import json, sys, os
R = sys.argv[1]
t = {}
for v in ("new", "base", "new2", "base2"):
    f = os.path.join(R, v + ".json")
    if not os.path.exists(f): continue
    for r in json.load(open(f))["rows"]:
        t.setdefault((r["shape"], r["M"]), {}).setdefault(r["config"], {})[v] = (r["us"], r.get("plan"))
print("| shape | M | fp16 | base p1 | new p1 | new/base p1 | base p2 | new p2 | new p2/p1 | plan (p1) |")
print("|---|---|---|---|---|---|---|---|---|---|")
def best(c, keys):
    v = [c[k][0] for k in keys if k in c]
    return min(v) if v else float("nan")
for (s, M), c in t.items():
    f = best(c["fp16"], ("new", "base", "new2", "base2"))
    b1, n1 = best(c["rt0 s0 x0 p1"], ("base", "base2")), best(c["rt0 s0 x0 p1"], ("new", "new2"))
    b2, n2 = best(c["rt0 s0 x0 p2"], ("base", "base2")), best(c["rt0 s0 x0 p2"], ("new", "new2"))
    p = c["rt0 s0 x0 p1"]["new"][1]
    print(f"| {s} | {M} | {f:.2f} | {b1:.2f} | {n1:.2f} | {n1 / b1:.3f} | {b2:.2f} | {n2:.2f} | {n2 / n1:.3f} | "
          f"{p['tokens']}x{p['row_tiles']} s{p['splits']} {'staged' if p['x_staged'] else 'image'} |")
PY
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
