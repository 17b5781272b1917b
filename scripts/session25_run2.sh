#!/usr/bin/env bash
# Session 25, device run 2 (carried build of main 78870d6 + two experiment builds, expX/ and expW/: the
# wgmma kernel (k = 4 only) with the image's x copies left out, or the weight copies left out; wrong
# results, the same instructions otherwise): where the wgmma kernel's time goes at large M. The wgmma op
# on Q, gate/up, down, 8B gate/up at M = 128 / 512 / 1024 for the three builds, then ncu (stalls, pipes)
# on 8B gate/up M = 1024 and Q M = 512 with main's build. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
for d in expX expW; do  # each carries only its .so.xz (the 64 MiB cap): main's Python packages around it
  mkdir -p $d/kbit && cp -r kbit/*.py kbit/integrations kbit/nn $d/kbit/ && cp -r benchmarks $d/
  xz -dc $d/_C.cpython-312-x86_64-linux-gnu.so.xz > $d/kbit/_C.cpython-312-x86_64-linux-gnu.so
done
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes Q,gateup,down,llama8b_gu --ms 128,512,1024 --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo; }
timeout 90 $AB --out $R/ab-main > $R/ab-main.log 2>&1; echo "== main: $(row $R/ab-main.log)"
for d in expX expW; do
  (cd $d && timeout 90 $AB --out $R/ab-$d > $R/ab-$d.log 2>&1); echo "== $d: $(row $R/ab-$d.log)"
done
SHAPES="l8b_m1024: --op wgmma_gemm --k 4 --M 1024 --N 14336 --K 4096
q_m512: --op wgmma_gemm --k 4 --M 512 --N 4096 --K 2048" \
  KERNEL=wgmma_gemm_kernel STALLS=1 OUT=$R timeout 240 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
cat $R/ncu-summary.log | cut -c1-160
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
