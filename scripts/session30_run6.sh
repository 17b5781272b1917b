#!/usr/bin/env bash
# Session 30, device run 6 (carried builds): the x-staged wgmma kernel's consumers stored group 0's x before the CTA
# barrier, so every CTA's prologue waited for those loads (run 2's stall samples, Qwen3 Q M = 64: 11% on that store)
# before the pair table was built; now they store it after the table (the build overlaps the loads). main3 = the
# build before (exp_variants/main3), new = this tree. The wgmma op on the Qwen3 shapes at M = 16-64 (x staged there),
# two rounds main3, new, new, main3; the wgmma GPU tests; memcheck and racecheck on the wgmma cluster cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s30; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
here=$(pwd)
mkdir -p /tmp/v_main3 && cp -r kbit /tmp/v_main3/ && xz -dc exp_variants/main3/_C.cpython-312-x86_64-linux-gnu.so.xz > /tmp/v_main3/kbit/_C.cpython-312-x86_64-linux-gnu.so
path_of() { case $1 in new) echo "$here";; *) echo "/tmp/v_$1:$here";; esac; }
round=0
for v in main3 new new main3; do
  round=$((round + 1))
  PYTHONPATH=$(path_of $v) timeout 60 python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,O,gateup,down,KV \
    --ms 16,32,40,64 --ks 2,4 --out $R/$round-$v > $R/$round-$v.log 2>&1
  echo "$round $v rc=$?"
done
python3 scripts/ab_table.py main3-1=$R/1-main3 new-1=$R/2-new new-2=$R/3-new main3-2=$R/4-main3 | tee $R/ab.md
timeout 100 python3 -m pytest tests/test_cuda_gemm.py -k wgmma -q > $R/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests-wgmma.log | tail -5 | cut -c1-300
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda wgmma-splits \
    > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
