#!/usr/bin/env bash
# Session 22, device run 2 (ab_base/ = main f684078): the row schedule with its racecheck fix (nothing is
# written for out-of-order offsets) and build_grouped_schedule skipping its max scan for ordered offsets.
# the grouped tests; compute-sanitizer memcheck / racecheck / synccheck on the grouped-schedule cases;
# MoE decode over all experts (new forms 0 and 2, base); a kbit.Experts decode step against its two grouped
# calls (scripts/probe_experts_decode.py); the MoE sweep against the base (alternating).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s22; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
timeout 110 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "grouped or row_schedule or launch_plan" \
  > $R/tests-grouped.log 2>&1; tail -1 $R/tests-grouped.log; grep -E "^(FAILED|ERROR)" $R/tests-grouped.log | head -5
SP="python3 scripts/probe_moe_sparse.py --experts 64,128,512 --active 8 --rows 1"
TK="python3 scripts/probe_moe_sparse.py --experts 128 --topk 8 --tokens 1,4,16,32"
timeout 60 $SP --forms 0,2 --out $R/sparse-new > $R/sparse-new.log 2>&1; echo "== sparse new"; grep "^| moe" $R/sparse-new.log
(cd ab_base && PYTHONPATH=$(pwd) timeout 45 $SP --forms 0 --out $R/sparse-base > $R/sparse-base.log 2>&1)
echo "== sparse base"; grep "^| moe" $R/sparse-base.log; tail -2 $R/sparse-base.log | grep -v "^|"
timeout 60 $TK --forms 0,2 --out $R/topk-new > $R/topk-new.log 2>&1; echo "== topk new"; grep "^| moe" $R/topk-new.log
(cd ab_base && PYTHONPATH=$(pwd) timeout 45 $TK --forms 0 --out $R/topk-base > $R/topk-base.log 2>&1)
echo "== topk base"; grep "^| moe" $R/topk-base.log
timeout 90 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,4,16 --out $R/experts-new > $R/experts-new.log 2>&1
echo "== experts new"; grep "^| [0-9]" $R/experts-new.log; tail -2 $R/experts-new.log | grep -v "^|"
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4,8"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=f684078 timeout 70 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
  timeout 70 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
done
for tool in memcheck racecheck synccheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|SYNCCHECK SUMMARY" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
