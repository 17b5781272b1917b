#!/usr/bin/env bash
# Session 20, device run 6 (carried build: with one warp per unit the GEMV's mma kernels of 1-8 token slots
# store a unit's sums from the warp's lanes, no shared-memory trip or slot barrier; ab_base/ = 667c78f):
# the MoE sweep against the base (twice, alternating), test_cuda_gemm.py -k "gemv or grouped",
# compute-sanitizer on the grouped-schedule cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,Grouped,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,4,8"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=667c78f timeout 60 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
  timeout 60 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "gemv or grouped" > $R/tests-gemv-grouped.log 2>&1; tail -1 $R/tests-gemv-grouped.log
for tool in memcheck racecheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|ran" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
