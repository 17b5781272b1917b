#!/usr/bin/env bash
# Session 23, device run 2 (carried build, as run 1): the wgmma CTA shape on the shapes run 1 left out
# (O, KV, GLM shared experts, 70B gate/up; M = 40 .. 128), and gate/up's splits under each shape (run 1:
# two warpgroups lost 0.7-0.9 us at M = 48 / 64 there, won everywhere else); at M = 96 / 128 x staged by
# the kernel against the image pass (two warpgroups; gate/up and down run 3 groups per CTA on 2 stages),
# and forced splits with x staged. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
ab() {  # ab ROW_TILES SPLITS NAME SHAPES MS
  timeout 150 python3 -c "import sys, kbit; kbit._C._set_wgmma_row_tiles($1); kbit._C._set_wgmma_splits($2); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','$4','--ms','$5','--ks','4','--out','$R/$3']; ab_paths.main()" > $R/$3.log 2>&1
  echo "== row tiles $1 splits $2 ($3)"; grep "k=4" $R/$3.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
}
for rt in 16 8; do ab $rt 0 rt$rt O,KV,glm_shared_gu,glm_shared_dn,llama70b_gu 40,48,64,96,128; done
for s in 2 3 4 5 6 8; do ab 8 $s gu-rt8-s$s gateup 40,48,64; done
for s in 4 5 6 8; do ab 16 $s gu-rt16-s$s gateup 40,48,64; done
xmode() {  # xmode ROW_TILES SPLITS MODE NAME SHAPES MS
  timeout 150 python3 -c "import sys, kbit; kbit._C._set_wgmma_row_tiles($1); kbit._C._set_wgmma_splits($2); kbit._C._set_wgmma_x_staging($3); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','$5','--ms','$6','--ks','4','--out','$R/$4']; ab_paths.main()" > $R/$4.log 2>&1
  echo "== row tiles $1 splits $2 x mode $3 ($4)"; grep "k=4" $R/$4.log | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo
}
for mode in 1 2; do xmode 8 0 $mode xmode$mode gateup,down,llama8b_gu 96,128; done
for s in 2 3 4; do xmode 8 $s 1 gu128-s$s-staged gateup,down 128; done
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
