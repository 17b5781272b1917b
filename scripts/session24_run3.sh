#!/usr/bin/env bash
# Session 24, device run 3 (carried build; ab_base/ = main 0dac313's build): the x image pass launched
# without PDL (the default now: its CTAs spread over the GPU) against with PDL (its CTAs start early on the
# SMs the GEMM before it leaves free: 8B gate/up at M = 96-128 lost 0.3-1.0 us in runs 1-2), and the base;
# the wgmma op at M = 96-128 on the Qwen3 and Llama-3 shapes, three rounds; then the PDL and wgmma tests.
# (Ran on 1d7f14a, where the aid took a bool: on = PDL. Since then it takes a mode, 1 never / 2 always,
# and rejects bools: pass 1 for False and 2 for True to repeat this run.)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s24; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
ARGS="'--ops','wgmma_gemm','--shapes','${SHAPES:-Q,O,gateup,down,llama8b_gu,llama70b_gu}','--ms','${MS:-64,96,128}','--ks','4'"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo; }
for rep in 1 2 3; do
  (cd ab_base && KBIT_BENCH_COMMIT=0dac313 timeout 90 python3 -c "import sys; from benchmarks import ab_paths; sys.argv=['x',$ARGS,'--out','$R/base-$rep']; ab_paths.main()" > $R/base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/base-$rep.log)"
  for pdl in False True; do
    timeout 90 python3 -c "import sys, kbit; kbit._C._set_wgmma_image_dependent_launch($pdl); from benchmarks import ab_paths; sys.argv=['x',$ARGS,'--out','$R/pdl-$pdl-$rep']; ab_paths.main()" > $R/pdl-$pdl-$rep.log 2>&1
    echo "== image pdl $pdl $rep: $(row $R/pdl-$pdl-$rep.log)"
  done
done
timeout 150 python3 -m pytest tests/test_dependent_launch.py tests/test_cuda_gemm.py -q --maxfail=10 -k "wgmma or dependent or see_weights or chained" \
  > $R/tests-wgmma.log 2>&1; tail -1 $R/tests-wgmma.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma.log | head -8
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
