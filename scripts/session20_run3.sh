#!/usr/bin/env bash
# Session 20, device run 3 (carried build: the grouped GEMV's per-CTA schedule looked up with two ballots,
# TcSchedule::unit_warp; L2 hints for the codebook and first row scales in dense GEMV launches only; run 2's
# table; ab_base/ = main 385809d): the grouped sweep against the base (twice, alternating), kbit.gemm against
# cuBLAS fp16 at M = 1-128 (the numbers of record), test_cuda_gemm.py whole; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,Grouped,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,4,8"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=385809d timeout 60 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; grep -h "^| moe_.* x " $R/moe-base-$rep/*/results-full.md | sort -u | cut -d'|' -f2-5 | tr -s ' ' | tr '\n' ';'; echo
  timeout 60 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; grep -h "^| moe_.* x " $R/moe-new-$rep/*/results-full.md | sort -u | cut -d'|' -f2-5 | tr -s ' ' | tr '\n' ';'; echo
done
timeout 120 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1; grep "k=4" $R/gemm.log | tr -s ' ' | sed 's/ gemm//; s/k=4 //' | tr '\n' ';'; echo
timeout 230 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -1 $R/tests-cuda-gemm.log
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
