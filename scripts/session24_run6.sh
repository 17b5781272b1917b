#!/usr/bin/env bash
# Session 24, device run 6 (carried build; ab_base/ = 5f5bec5's build, runs 4-5): the wgmma kernel's split
# reduction with two quads a thread per round (every remote load of the round issued before its first sum).
# The wgmma op against the base at M = 48-128 (two alternating rounds); the wgmma and PDL tests; memcheck,
# racecheck on the wgmma cluster cases; kbit.gemm against cuBLAS fp16 at M = 1-128 (the numbers of record
# if kept). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s24; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,O,gateup,down,glm_shared_dn,llama8b_gu --ms 48,64,96,128 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/ gemm//; s/k=4 //' | tr '\n' ';'; echo; }
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=5f5bec5 timeout 90 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log)"
  timeout 90 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log)"
done
timeout 150 python3 -m pytest tests/test_dependent_launch.py tests/test_cuda_gemm.py -q --maxfail=10 -k "wgmma or dependent or see_weights or chained" \
  > $R/tests-wgmma.log 2>&1; tail -1 $R/tests-wgmma.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma.log | head -8
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-wgmma-$tool.log | tr '\n' ' ')"
done
timeout 120 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
echo "== gemm: $(row $R/gemm.log)"
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
