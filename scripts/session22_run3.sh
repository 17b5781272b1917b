#!/usr/bin/env bash
# Session 22, device run 3 (ab_base/ = main f684078): the per-warp schedule in its own kernel, and
# kbit.Experts' glue as three ops (moe_route, silu_and_mul, moe_combine). Their tests, the grouped GEMV
# tests, compute-sanitizer on the glue's cases; a kbit.Experts decode step (new, base); the MoE sweep at
# 8 experts (the per-warp kernel) against the base, alternating.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s22; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
timeout 150 python3 -m pytest tests/test_moe_ops.py tests/test_nn.py tests/test_opcheck.py -q --maxfail=10 \
  > $R/tests-moe.log 2>&1; tail -1 $R/tests-moe.log; grep -E "^(FAILED|ERROR)" $R/tests-moe.log | head -8
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "grouped or row_schedule or launch_plan" \
  > $R/tests-grouped.log 2>&1; tail -1 $R/tests-grouped.log; grep -E "^(FAILED|ERROR)" $R/tests-grouped.log | head -5
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda moe-glue \
    > $R/sanitize-moe-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-moe-$tool.log | tr '\n' ' ')"; tail -3 $R/sanitize-moe-$tool.log | grep -v SUMMARY
done
EX="python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,4,16"
timeout 70 $EX --out $R/experts-new > $R/experts-new.log 2>&1; echo "== experts new"; grep "^| [0-9]" $R/experts-new.log; tail -2 $R/experts-new.log | grep -v "^|"
(cd ab_base && PYTHONPATH=$(pwd) timeout 70 python3 ../scripts/probe_experts_decode.py --experts 128,512 --tokens 1,4,16 \
  --out $R/experts-base > $R/experts-base.log 2>&1); echo "== experts base"; grep "^| [0-9]" $R/experts-base.log; tail -2 $R/experts-base.log | grep -v "^|"
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8 --sweep-ms 1,4,8"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=f684078 timeout 50 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
  timeout 50 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
done
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
