#!/usr/bin/env bash
# Session 22, device run 6 (ab_base/ = main f684078): the row schedule in a kernel instantiation of its
# own (the 8-expert call's kernel as the base's but for the skipped max scan). The grouped GEMV tests,
# racecheck / memcheck on the grouped-schedule cases, the all-experts probe (forms 0 / 2), the MoE sweep
# against the base (8 / 64 / 256 experts x 1 / 4 / 8 tokens, two alternating repeats).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s22; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4,8"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=f684078 timeout 60 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
  timeout 60 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
done
timeout 45 python3 scripts/probe_moe_sparse.py --experts 64,128,512 --active 8 --rows 1 --forms 0,2 --out $R/sparse \
  > $R/sparse.log 2>&1; echo "== sparse"; grep "^| moe" $R/sparse.log
timeout 40 python3 scripts/probe_experts_decode.py --experts 128 --tokens 1,4 --out $R/experts > $R/experts.log 2>&1
echo "== experts"; grep "^| [0-9]" $R/experts.log
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
timeout 100 python3 -m pytest tests/test_cuda_gemm.py tests/test_moe_ops.py -q --maxfail=10 \
  -k "grouped or row_schedule or launch_plan or moe" > $R/tests-grouped.log 2>&1
tail -1 $R/tests-grouped.log; grep -E "^(FAILED|ERROR)" $R/tests-grouped.log | head -5
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
