#!/usr/bin/env bash
# Session 26, device run 10 (carried build of 3cabdf7's sources; the harness now also waits, after a timing over
# 4x heavier per call, for the draw to fall below 35% of the power limit): run 9's sparse sweep again (8B gate/up
# at M = 1024 then 1, where M = 1 read 14.6 us against 12.9), 70B gate/up at M = 1024, 4, 1, twice; the harness
# tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
for rep in 1 2; do
  timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu --ms 1,4,1024 --ks 4 --out $R/gemm-$rep > $R/gemm-$rep.log 2>&1
  echo "gemm $rep rc=$?"
  python3 - $R/gemm-$rep/ab-*.json <<'PY'
import json, sys
print([(r["shape"][:7], r["M"], r["path"], round(r["us"], 1), r["sm_mhz"], round(r["settle_ms"])) for r in json.load(open(sys.argv[1]))["rows"]])
PY
done
timeout 100 python3 -m pytest benchmarks/tests -q > $R/tests.log 2>&1; tail -1 $R/tests.log
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
