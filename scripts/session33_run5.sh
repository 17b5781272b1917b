#!/usr/bin/env bash
# Session 33, device run 5 (carried build: group 0's x from x itself, first_x_direct, the rule): the wgmma tests, then
# the wgmma op with group 0's x from the image (d1) against from x itself (d2), the rule's shape, splits and form of x
# (d has no effect where the rule stages x: those cells measure the noise), seven shapes, M = 16-256, two
# alternating rounds.
# (The feature was reverted after this run, 034c9e7 -> the next commit: slower in every image-form cell at M >= 64; the
# script needs 034c9e7's tree: its probe option --direct and the aid went with the revert.)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s33; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "wgmma" -x -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E  |passed|failed" $R/tests.log | head -12 | cut -c1-300
for v in r1 r2; do
  timeout 150 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu,llama8b_gu,llama70b_gu \
    --ms 16,40,64,128,256 --row-tiles 0 --splits 0 --staging 0 --direct 1,2 --out $R/direct-$v.json > $R/direct-$v.log 2>&1
  echo "$v rc=$?"
done
python3 - $R <<'PY' | tee $R/direct.md
import json, sys, os
R = sys.argv[1]
t = {}
for v in ("r1", "r2"):
    for r in json.load(open(os.path.join(R, f"direct-{v}.json")))["rows"]:
        t.setdefault((r["shape"], r["M"]), {}).setdefault(r["config"], []).append((r["us"], r.get("plan")))
print("| shape | M | fp16 | group 0 from the image | from x itself | direct / image | plan |")
print("|---|---|---|---|---|---|---|")
for (s, M), c in t.items():
    f = min(u for u, _ in c["fp16"]); d1 = min(u for u, _ in c["rt0 s0 x0 d1"]); d2 = min(u for u, _ in c["rt0 s0 x0 d2"])
    p = c["rt0 s0 x0 d2"][0][1]
    form = "staged" if p["x_staged"] else "image"
    print(f"| {s} | {M} | {f:.2f} | {d1:.2f} | {d2:.2f} | {d2 / d1:.3f} | {p['tokens']}x{p['row_tiles']} s{p['splits']} {form} |")
PY
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
