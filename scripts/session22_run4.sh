#!/usr/bin/env bash
# Session 22, device run 4 (the tree to land; ab_base/ = main f684078): test_cuda_gemm.py whole,
# compute-sanitizer memcheck on the MoE glue cases and racecheck on the grouped-schedule cases, the MoE
# sweep against the base (8 / 64 / 256 experts x 1 / 4 / 8 tokens), a kbit.Experts decode step.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s22; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4,8"
(cd ab_base && KBIT_BENCH_COMMIT=f684078 timeout 70 $MOE --out $R/moe-base > $R/moe-base.log 2>&1); echo "== moe base"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-base/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
timeout 70 $MOE --out $R/moe-new > $R/moe-new.log 2>&1; echo "== moe new"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-new/*/results-full.md | grep "^| moe" | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
timeout 60 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,4,16 --out $R/experts-new > $R/experts-new.log 2>&1
echo "== experts new"; grep "^| [0-9]" $R/experts-new.log
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda moe-glue \
  > $R/sanitize-moe-memcheck.log 2>&1; echo "memcheck moe rc=$? $(grep -h "ERROR SUMMARY" $R/sanitize-moe-memcheck.log)"
timeout 50 compute-sanitizer --tool racecheck --error-exitcode 99 --num-cuda-barriers 100000 python3 scripts/sanitize_cases.py \
  cuda grouped-schedule > $R/sanitize-grouped-racecheck.log 2>&1; echo "racecheck grouped rc=$? $(grep -h "RACECHECK SUMMARY" $R/sanitize-grouped-racecheck.log)"
timeout 230 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 > $R/tests-cuda-gemm.log 2>&1
tail -1 $R/tests-cuda-gemm.log; grep -E "^(FAILED|ERROR)" $R/tests-cuda-gemm.log | head -5
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
