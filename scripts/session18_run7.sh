#!/usr/bin/env bash
# Session 18, device run 7 (carried build of 3adbc89: cluster split-K, x staged where no stage
# refills, the re-tuned table): kbit.gemm (the dispatcher) against cuBLAS fp16 on the dense shapes at
# M = 1-128 (k = 4, cold), the host cost per call, compute-sanitizer (memcheck, racecheck,
# synccheck) on the wgmma cluster cases; tarred into $OUT. The GPU suite runs in run 8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=3adbc89
LOGS=/tmp/s18; R=$LOGS/r7; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,48,64,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1; grep "k=4" $R/gemm.log | tr -s ' ' | tr '\n' ';'; echo
timeout 60 python3 -m benchmarks.bench_dispatch --out $R/dispatch > $R/dispatch.log 2>&1
grep -E "kbit.gemm  |gemm_direct  |torch.add\(x" $R/dispatch.log
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize-wgmma-$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run7.tar.gz -C $R .
