#!/usr/bin/env bash
# Session 39, device run 5: the row scale scaled where the sums take it (this commit's csrc) against 24d06a8's build
# (ab_base/: the same Python package with that build's extension, carried as ab_base/_C...so.xz). Grouped (probe, the
# rule) and dense (kbit.gemm via ab_paths) in ABBA order; the x-shared / plan / split tests on this build.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
root=$(pwd)
mkdir -p ab_base/kbit && cp -r kbit/. ab_base/kbit/ && rm -f ab_base/kbit/_C.*.so* && \
  xz -d -c ab_base/_C.cpython-312-x86_64-linux-gnu.so.xz > ab_base/kbit/_C.cpython-312-x86_64-linux-gnu.so
PYTHONPATH=$root/ab_base:$root python3 -c "import kbit, os; print('base imports', os.path.relpath(kbit._C.__file__))"
grouped() {  # $1 label, $2 PYTHONPATH
  PYTHONPATH=$2 timeout 100 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 8,64,512 \
    --per-expert 1,8 --settings 2:1 --reps 3 --out $R/g-$1 > $OUT/g-$1.log 2>&1; echo "grouped $1 rc=$?"
}
dense() {
  PYTHONPATH=$2 timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes llama8b_gu,llama70b_gu,gateup,Q \
    --ms 1,4,16 --ks 4,5 --out $R/d-$1 > $OUT/d-$1.log 2>&1; echo "dense $1 rc=$?"
}
grouped base1 $root/ab_base:$root; grouped new1 $root; grouped new2 $root; grouped base2 $root/ab_base:$root
for t in base1 new1 new2 base2; do echo "== $t"; grep "^| moe" $OUT/g-$t.log | cut -d'|' -f2-6; done
dense base1 $root/ab_base:$root; dense new1 $root; dense new2 $root; dense base2 $root/ab_base:$root
python3 scripts/ab_table.py base1=$R/d-base1 new1=$R/d-new1 new2=$R/d-new2 base2=$R/d-base2 --path gemm | tee $OUT/dense-ab.md
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan or split" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
cp $R/d-*/ab-*.json $OUT/ 2>/dev/null; for t in base1 new1 new2 base2; do cp $R/d-$t/ab-*.json $OUT/dense-$t.json; cp $R/g-$t/grouped-schedule.json $OUT/grouped-$t.json; done 2>/dev/null
