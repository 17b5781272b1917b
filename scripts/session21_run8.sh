#!/usr/bin/env bash
# Session 21, device run 8 (branch s21-sparse-moe: the sparse per-warp schedule with its offsets loaded
# 256 experts at a time up front; ab_base/ = main 681bde1): the grouped tests, compute-sanitizer on the
# grouped-schedule cases (per-CTA and sparse), where the one-slot kernel spills, the sparse MoE probe
# (new and base), the MoE sweep against the base (twice, alternating).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s21; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "grouped or one_warp" > $R/tests-grouped.log 2>&1
tail -1 $R/tests-grouped.log; grep -E "^(FAILED|ERROR)" $R/tests-grouped.log | head -5
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
f=_ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi4ELi1ELb1ELNS0_10GemvDecodeE2ELb0EEEvNS0_10TcGemmArgsE
cuobjdump -sass -fun $f kbit/_C.cpython-312-x86_64-linux-gnu.so > $R/sass-grouped-1slot.txt 2>&1
echo "1-slot grouped: $(grep -c '' $R/sass-grouped-1slot.txt) lines; spills:"; grep -n "STL\|LDL" $R/sass-grouped-1slot.txt | cut -c1-90
SP="python3 scripts/probe_moe_sparse.py --experts 64,128,256,512 --active 8 --rows 1,4"
timeout 100 $SP --forms 0,2 --chunk-rows 0,4 --out $R/sparse-new > $R/sparse-new.log 2>&1; echo "== sparse new"; grep "^|" $R/sparse-new.log
(cd ab_base && PYTHONPATH=$(pwd) timeout 60 $SP --forms 0 --chunk-rows 0 --out $R/sparse-base > $R/sparse-base.log 2>&1)
echo "== sparse base"; grep "^|" $R/sparse-base.log; tail -2 $R/sparse-base.log | grep -v "^|"
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=681bde1 timeout 50 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
  timeout 50 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new-$rep/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
done
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
