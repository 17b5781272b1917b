#!/usr/bin/env bash
# Session 23, device run 1 (carried build): the wgmma kernel's CTA shape from M = 33, two warpgroups on
# 128 rows x 64 / 128 tokens (kbit._C._set_wgmma_row_tiles(8)) against four on 256 rows x chunks of 64
# (16: the kernel of main), the op itself (benchmarks.ab_paths, two alternating repeats); the wgmma
# tests; memcheck on the wgmma cluster cases (both shapes). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
SHAPES=${SHAPES:-Q,gateup,down,llama8b_gu}; MS=${MS:-48,64,96,128}
ab() {  # ab ROW_TILES NAME
  timeout 120 python3 -c "import sys, kbit; kbit._C._set_wgmma_row_tiles($1); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','$SHAPES','--ms','$MS','--ks','4','--out','$R/$2']; ab_paths.main()" > $R/$2.log 2>&1
  echo "== row tiles $1 ($2)"; grep "k=4" $R/$2.log | tr -s ' ' | tr '\n' ';'; echo
}
for rep in 1 2; do ab 16 rt16-$rep; ab 8 rt8-$rep; done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma" > $R/tests-wgmma.log 2>&1
tail -1 $R/tests-wgmma.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma.log | head -8
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda wgmma-splits \
  > $R/sanitize-wgmma-memcheck.log 2>&1
echo "memcheck rc=$? $(grep -h "ERROR SUMMARY" $R/sanitize-wgmma-memcheck.log)"
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
