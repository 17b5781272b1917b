#!/usr/bin/env bash
# Session 59, runs 16-17: 4 warps a unit instead of 8 for one-token-slot grouped launches of 8 groups whose units
# take two rounds of the 8-warp CTAs and whose critical path does not grow (scalar_gemv_launch.cuh; run 15) on TREE:
# "new" (this checkout, its carried build; then the grouped GEMV tests) or "base" (ab_base/: b6b1513's Python, scripts
# and build, carried alone). The MoE sweep at 8-32 experts x 1 row and kbit.Experts' decode step.
# TESTS=0: no tests after the new tree's timings (session 60 alternates new / base / new).
set -uo pipefail
cd "$(dirname "$0")/.."
TREE=${1:?new or base}
OUT=${OUT:-$(pwd)/out}; mkdir -p "$OUT"  # (absolute: the base tree runs in ab_base/)
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown} PYTHONUNBUFFERED=1
if [ "$TREE" = new ]; then
  . scripts/gpu_build.sh; start_device_run || exit 1; dir=.
else
  dir=ab_base; (cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
fi
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,9,10,12,16,24,32 --sweep-ms 1"
(cd $dir && PYTHONPATH=$(pwd) timeout 100 $MOE --out $OUT/moe-$TREE > $OUT/moe-$TREE.log 2>&1)
echo "== moe $TREE rc=$?"
grep -h "^| moe_.* x " $OUT/moe-$TREE/*/results-full.md | sort -u | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'; echo
(cd $dir && PYTHONPATH=$(pwd) timeout 60 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,2,4 \
  --out $OUT/experts-$TREE > $OUT/experts-$TREE.log 2>&1)
echo "== experts $TREE rc=$?"; grep "^| [0-9]" $OUT/experts-$TREE.log | cut -c1-120
if [ "$TREE" = new ] && [ "${TESTS:-1}" = 1 ]; then
  timeout 260 python3 -m pytest -q -x tests/test_moe_ops.py tests/test_cuda_gemm.py -k "grouped or moe or silu" \
    > $OUT/tests-grouped.log 2>&1
  echo "== tests rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-grouped.log | tail -4 | cut -c1-300
fi
