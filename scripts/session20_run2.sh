#!/usr/bin/env bash
# Session 20, device run 2 (carried build: the GEMV hints L2 for the codebook's line and its first unit's
# row scales before the PDL wait; the 3-stage grouped ring of run 1 reverted; run 1's table; ab_base/ =
# main 385809d): the dense GEMV op and the grouped sweep against the base
# (twice, alternating), tune_dispatch on this build, Nsight Compute on the grouped GEMV at 256 x 1; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops gemv_gemm --shapes KV,Q,O,gateup,down,llama8b_gu --ms 1,4,16,64 --ks 4"
MOE="python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,Grouped,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256 --sweep-ms 1,4"
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=385809d timeout 80 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1); echo "== base $rep"; grep "k=4" $R/ab-base-$rep.log | tr -s ' ' | sed 's/ gemv_gemm//; s/k=4 //' | tr '\n' ';'; echo
  timeout 80 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1; echo "== new $rep"; grep "k=4" $R/ab-new-$rep.log | tr -s ' ' | sed 's/ gemv_gemm//; s/k=4 //' | tr '\n' ';'; echo
  (cd ab_base && KBIT_BENCH_COMMIT=385809d timeout 60 $MOE --out $R/moe-base-$rep > $R/moe-base-$rep.log 2>&1); echo "== moe base $rep"; grep -h "^| moe_.* x " $R/moe-base-$rep/*/results-full.md | sort -u | tr -s ' ' | tr '\n' ';'; echo
  timeout 60 $MOE --out $R/moe-new-$rep > $R/moe-new-$rep.log 2>&1; echo "== moe new $rep"; grep -h "^| moe_.* x " $R/moe-new-$rep/*/results-full.md | sort -u | tr -s ' ' | tr '\n' ';'; echo
done
TUNE_TIMEOUT=200 timeout 210 python3 -m benchmarks.tune_dispatch --out $R/dispatch > $R/dispatch.log 2>&1; tail -1 $R/dispatch.log | cut -c1-200
# Nsight Compute: the grouped GEMV on Qwen3 MoE down (K = 512) and gate/up (K = 2048), 256 experts x 1 token
OUT=$R/ncu KERNEL=scalar_gemv STALLS=1 SHAPES="dn256: --k 4 --M 1 --N 2048 --K 512 --experts 256
gu256: --k 4 --M 1 --N 512 --K 2048 --experts 256" timeout 150 bash scripts/ncu_gemm.sh > $R/ncu.log 2>&1
grep -E "Duration|DRAM Throughput|Issued Ipc|Warp Cycles Per Issued|issue_stalled_(long|wait|barrier|short|membar|lg|no_inst|math|mio|not_sel|selected)" $R/ncu.log | tr -s ' ' | cut -c1-90
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
