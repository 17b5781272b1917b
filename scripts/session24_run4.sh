#!/usr/bin/env bash
# Session 24, device run 4 (carried build; ab_base/ = main 0dac313's build): the image pass launched with
# PDL by the rule (where its CTAs and the GEMM's fit on the GPU at once). The wgmma op under the rule
# against the base at M = 64-128 (two alternating rounds) and the plans it takes; then every GPU test file
# and benchmarks/tests; memcheck and racecheck on the wgmma cluster cases. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s24; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
python3 -c "
import kbit
for name, (N, K) in dict(Q=(4096, 2048), O=(2048, 4096), gateup=(5120, 2048), down=(2048, 5120), l8b=(14336, 4096), l70b=(28672, 8192)).items():
    print(name, [(M, kbit._C._wgmma_launch_plan(M, N, K, 4)) for M in (64, 96, 128)])" > $R/plans.log 2>&1
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 64,96,128 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/ gemm//; s/k=4 //' | tr '\n' ';'; echo; }
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=0dac313 timeout 90 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log)"
  timeout 90 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log)"
done
timeout 500 python3 -m pytest tests benchmarks/tests -q --maxfail=10 > $R/tests-all.log 2>&1
tail -1 $R/tests-all.log; grep -E "^(FAILED|ERROR)" $R/tests-all.log | head -8
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-wgmma-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
