#!/usr/bin/env bash
# Session 19, device run 6 (carried build of 61e1098: the faster wgmma kernel, the re-tuned table, the
# remembered cluster counts; ab_base/ = main dd7833f): kbit.gemm (the dispatcher)
# against cuBLAS fp16 on the dense shapes at M = 1-128 (k = 4, cold), the host cost per call (base
# and new), compute-sanitizer (memcheck, racecheck) on the wgmma cluster cases, test_cuda_gemm.py
# (the other test files: run 7); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=61e1098
LOGS=/tmp/s19; R=$LOGS/r6; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,48,64,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1; grep "k=4" $R/gemm.log | tr -s ' ' | tr '\n' ';'; echo
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=dd7833f timeout 60 python3 -m benchmarks.bench_dispatch --out $R/host-base-$rep > $R/host-base-$rep.log 2>&1)
  echo "== host base $rep"; grep -E "kbit.gemm  |gemm_direct  |torch.add\(x" $R/host-base-$rep.log
  timeout 60 python3 -m benchmarks.bench_dispatch --out $R/host-new-$rep > $R/host-new-$rep.log 2>&1
  echo "== host new $rep"; grep -E "kbit.gemm  |gemm_direct  |torch.add\(x" $R/host-new-$rep.log
done
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize-wgmma-$tool.log | tail -2 | tr '\n' ' ')"
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
tar -czf $OUT/run6.tar.gz -C $R .
