#!/usr/bin/env bash
# Session 59, the grouped GEMV's A/B at 1 and 2 rows an expert (session 58 timed none of the 2-slot kernels that
# carry the gated epilogue; its k = 4 2-slot mma kernel has 8 bytes of stack where 23030ea's had none): the MoE sweep
# (Qwen3 MoE experts, k = 4, fp16, 8-512 experts x 1-2 rows, kbit.grouped_gemm against bmm) on TREE: "new" (this
# checkout, its carried build) or "base" (ab_base/: 23030ea's Python and build, carried alone: the grouped GEMV of
# session 57). Calls on one warm machine, alternating: new 1, base 1, new 2, base 2.
set -uo pipefail
cd "$(dirname "$0")/.."
TREE=${1:?new or base}; REP=${2:-1}
OUT=${OUT:-$(pwd)/out}; mkdir -p "$OUT"  # (absolute: the base tree runs in ab_base/)
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown} PYTHONUNBUFFERED=1
if [ "$TREE" = new ]; then
  . scripts/gpu_build.sh; start_device_run || exit 1; dir=.
else
  dir=ab_base; (cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
fi
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,2"
(cd $dir && PYTHONPATH=$(pwd) timeout 150 $MOE --out $OUT/moe-$TREE-$REP > $OUT/moe-$TREE-$REP.log 2>&1)
echo "== moe $TREE $REP rc=$?"
grep -h "^| moe_.* x " $OUT/moe-$TREE-$REP/*/results-full.md | sort -u | cut -d'|' -f2-5 \
  | tr -s ' ' | tr '\n' ';'; echo
