#!/usr/bin/env bash
# Session 29, device run 6 (carried builds): the x-resident GEMV kernels from 8 token slots spill under the 128-register
# cap since sessions 27-28 (cuobjdump -res-usage: k = 4 at 8 slots 24 bytes of stack, 16 slots 8-32 bytes at every k;
# session 26's had none), and run 5's tune read the GEMV at M = 16-32 on the Qwen3 shapes ~1 us slower than session
# 26's. Two builds of scalar_gemv.cuh, the rest equal: A = 05749d0 (items stepped by adds everywhere dense), B = this
# tree (x resident from 8 slots recomputes each item's index, as session 26 did). (A third, B with 32-bit item
# counters, did not fit the run's 64 MiB.) Each build's GEMV by the rule at M = 1-32 on the shapes where it runs,
# two rounds A, B; then
# benchmarks.tune_dispatch with B (the tree's build).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
here=$(pwd)
for v in A; do
  mkdir -p /tmp/v_$v && cp -r kbit /tmp/v_$v/ && xz -dc exp_variants/$v.so.xz > /tmp/v_$v/kbit/_C.cpython-312-x86_64-linux-gnu.so
done
path_of() { case $1 in B) echo "$here";; *) echo "/tmp/v_$1:$here";; esac; }
for round in 1 2; do
  for v in A B; do
    PYTHONPATH=$(path_of $v) timeout 80 python3 scripts/probe_gemv_launch.py \
      --shapes llama8b_gu,llama70b_gu,gateup,glm_shared_gu,Q,O,down --ms 1,4,8,16,32 --k 4 --settings 1:1 --reps 2 \
      --out $R/$v-$round > $R/$v-$round.log 2>&1
    echo "$v round $round rc=$?"
  done
done
R=$R python3 - <<'PY'
import json, os
res = {}
for v in ("A", "B"):
    for rnd in (1, 2):
        for r in json.load(open(f"{os.environ['R']}/{v}-{rnd}/gemv-launch.json"))["rows"]:
            res.setdefault((r["shape"], r["M"]), {}).setdefault(v, []).append(r["us"]["1:1:1:0:8:0:-1:1:-1:0"])
print("| shape | M | A | B |")
for (s, M), d in res.items():
    print(f"| {s} | {M} | " + " | ".join("/".join(f"{t:.2f}" for t in d.get(v, [])) for v in ("A", "B")) + " |")
PY
start=$(date +%s); mkdir -p $R/tune
timeout ${TUNE_S:-200} python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$? in $(( $(date +%s) - start )) s"; ls $R/tune
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
