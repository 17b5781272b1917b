#!/usr/bin/env bash
# Session 26, device run 6: the staged GEMV's ring with 3 stages instead of 2 (two items in flight per warp while
# one is decoded) on the H200, where the decode GEMV reads ~2.4 TB/s against cuBLAS's ~3.8. Main's build (the
# carried one, kGemvStages = 2) against exp3/ (the same sources with kGemvStages = 3: not on main), alternating
# two rounds: the dense GEMV at M = 1 and 4 (the rule; 8 warps per unit) on five shapes, and the MoE decode sweep
# (8 / 64 experts x 1 / 4 / 8 tokens); exp3's launch plans. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
(cd exp3 && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
PROBE="scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,down,glm_shared_dn --ms 1,4 --settings 1:1,1:1:1:0:8:8 --reps 2"
MOE="-m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64 --sweep-ms 1,4,8"
(cd exp3 && PYTHONPATH=$(pwd) python3 -c "import kbit; print(kbit._C.__file__); print(kbit._C._gemv_launch_plan(1, 14336, 4096, 4, 'mma')); print(kbit._C._gemv_launch_plan(1, 5120, 2048, 4, 'mma'))") > $R/exp-plans.log 2>&1
cat $R/exp-plans.log | cut -c1-300
for rep in 1 2; do
  for side in main exp; do
    dir=.; [ $side = exp ] && dir=exp3
    (cd $dir && PYTHONPATH=$(pwd) timeout 70 python3 $PROBE --out $R/gemv-$side-$rep > $R/gemv-$side-$rep.log 2>&1)
    echo "== gemv $side $rep: $(grep '^|' $R/gemv-$side-$rep.log | tr -s ' ' | tr '\n' ' ')"
    (cd $dir && PYTHONPATH=$(pwd) timeout 60 python3 $MOE --out $R/moe-$side-$rep > $R/moe-$side-$rep.log 2>&1)
    echo "== moe $side $rep: $(sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe-$side-$rep/*/results-full.md | grep '^| moe' | cut -d'|' -f3-4 | tr -s ' ' | tr '\n' ';')"
  done
done
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
