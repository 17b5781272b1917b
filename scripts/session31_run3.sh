#!/usr/bin/env bash
# Session 31, device run 3 (carried build: main's): the wgmma op at every CTA shape, split count and x staging the
# tuning aids allow on Qwen3 Q, O, gate/up, down and GLM shared gate/up at M = 64 (Q and down at 40), against the rule
# (scripts/probe_wgmma_configs.py).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_wgmma_configs.py --shapes Q,O,gateup,down,glm_shared_gu --ms 64 --out $R/configs-m64.json \
  > $R/configs-m64.log 2>&1; echo "m64 rc=$?"
timeout 80 python3 scripts/probe_wgmma_configs.py --shapes Q,down --ms 40 --out $R/configs-m40.json \
  > $R/configs-m40.log 2>&1; echo "m40 rc=$?"
for f in $R/configs-*.log; do echo "== $f"; python3 - "$f" <<'PY'
import re, sys
best = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) M=(\d+) (.+?)\s+([\d.]+) us", line)
    if not m: continue
    key = (m[1], m[2]); cfg, us = m[3].strip(), float(m[4])
    best.setdefault(key, {})[cfg] = us
for (s, M), d in best.items():
    top = sorted((v, c) for c, v in d.items() if c not in ("fp16",))[:4]
    print(f"{s} M={M} fp16 {d.get('fp16', 0):.2f} rule {d.get('rule', 0):.2f} best " + ", ".join(f"{c} {v:.2f}" for v, c in top))
PY
done
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
