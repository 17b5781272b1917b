#!/usr/bin/env bash
# Session 26, device run 11 (carried build of 3cabdf7's sources): run 10's sparse sweeps again with ab_paths idling
# 1 s after a timing over 4x heavier per call (TimerConfig.cool_s; run 10's power-draw wait was replaced: NVML's
# average lagged and 70B M = 4 still read 58.2 us), two rounds; the harness tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-11}; mkdir -p $R; start_device_run || exit 1
for rep in 1 2; do
  timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu --ms 1,4,1024 --ks 4 --out $R/gemm-$rep > $R/gemm-$rep.log 2>&1
  echo "gemm $rep rc=$?"
  python3 - $R/gemm-$rep/ab-*.json <<'PY'
import json, sys
print([(r["shape"][:7], r["M"], r["path"], round(r["us"], 1), r["sm_mhz"], round(r["settle_ms"])) for r in json.load(open(sys.argv[1]))["rows"]])
PY
done
timeout 100 python3 -m pytest benchmarks/tests -q > $R/tests.log 2>&1; tail -1 $R/tests.log
tar -czf $OUT/run${RUN:-11}.tar.gz -C $R .
