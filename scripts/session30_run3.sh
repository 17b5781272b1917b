#!/usr/bin/env bash
# Session 30, device run 3 (carried builds): ptxas serialized the wgmma kernel's asynchronous wgmmas (warning C7513;
# every step waited for its own wgmma: WARPGROUP.DEPBAR.LE gsb0, 0x0 after each HGMMA) in 24 of its 40 kernels (k = 4
# at 16 tokens; k = 2 at 16-64; k = 3 at 16, 32 and 64 x 8 row tiles; k = 5 at 16 and 64 x 8) because of a branch
# (the stage release) between the wgmmas. base = the build before the fix (exp_variants/base), new = this tree (a
# predicated arrive). The wgmma op at M = 8-128 (k = 4, 8 shapes) and k = 2, 3, 5 (3 shapes, M = 16-64), two
# rounds base, new, new, base; the wgmma GPU tests with the new build; then benchmarks.tune_dispatch with it.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s30; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
here=$(pwd)
mkdir -p /tmp/v_base && cp -r kbit /tmp/v_base/ && xz -dc exp_variants/base/_C.cpython-312-x86_64-linux-gnu.so.xz > /tmp/v_base/kbit/_C.cpython-312-x86_64-linux-gnu.so
path_of() { case $1 in new) echo "$here";; *) echo "/tmp/v_$1:$here";; esac; }
for v in base new new base; do
  n=$(ls -d $R/$v-* 2>/dev/null | grep -c k4); n=$((n + 1))
  PYTHONPATH=$(path_of $v) timeout 100 python3 -m benchmarks.ab_paths --ops wgmma_gemm \
    --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu --ms 8,16,32,64,128 --ks 4 --out $R/$v-$n-k4 > $R/$v-$n-k4.log 2>&1
  echo "$v-$n k4 rc=$?"
  PYTHONPATH=$(path_of $v) timeout 60 python3 -m benchmarks.ab_paths --ops wgmma_gemm \
    --shapes Q,gateup,llama8b_gu --ms 16,32,64 --ks 2,3,5 --out $R/$v-$n-ks > $R/$v-$n-ks.log 2>&1
  echo "$v-$n ks rc=$?"
done
python3 scripts/ab_table.py base-1=$R/base-1-k4 new-1=$R/new-1-k4 new-2=$R/new-2-k4 base-2=$R/base-2-k4 | tee $R/ab-k4.md
python3 scripts/ab_table.py base-1=$R/base-1-ks new-1=$R/new-1-ks new-2=$R/new-2-ks base-2=$R/base-2-ks | tee $R/ab-ks.md
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -k wgmma -q > $R/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests-wgmma.log | tail -5 | cut -c1-300
start=$(date +%s); mkdir -p $R/tune
timeout 200 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$? in $(( $(date +%s) - start )) s"; ls $R/tune
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
