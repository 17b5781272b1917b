#!/usr/bin/env bash
# Session 24, device runs 1-2 (carried build; ab_base/ = main 0dac313's build; run 2: the pair table built by the consumers only, so the image's first copies go out right after the CTA barrier): the wgmma kernel's set-up
# (codebook, row scales, pair table, the first stages' weight copies) before its PDL wait where x comes
# from the image, while wgmma_x_image (now launched with PDL, waiting before it lets the GEMM start)
# runs. The wgmma op against the base at M = 48-128 on the Qwen3 and Llama-3 shapes (two alternating
# repeats); the wgmma and PDL tests; compute-sanitizer on the wgmma cluster cases. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s24; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
(cd ab_base && xz -dkf kbit/_C.cpython-312-x86_64-linux-gnu.so.xz)
AB="python3 -m benchmarks.ab_paths --ops wgmma_gemm --shapes ${SHAPES:-Q,O,gateup,down,llama8b_gu,llama70b_gu} --ms ${MS:-48,64,96,128} --ks 4"
row() { grep "k=4" $1 | tr -s ' ' | sed 's/ wgmma_gemm//; s/k=4 //' | tr '\n' ';'; echo; }
for rep in 1 2; do
  (cd ab_base && KBIT_BENCH_COMMIT=0dac313 timeout 90 $AB --out $R/ab-base-$rep > $R/ab-base-$rep.log 2>&1)
  echo "== base $rep: $(row $R/ab-base-$rep.log)"
  timeout 90 $AB --out $R/ab-new-$rep > $R/ab-new-$rep.log 2>&1
  echo "== new $rep: $(row $R/ab-new-$rep.log)"
done
timeout 150 python3 -m pytest tests/test_dependent_launch.py tests/test_cuda_gemm.py -q --maxfail=10 -k "wgmma or dependent or see_weights or chained" \
  > $R/tests-wgmma.log 2>&1; tail -1 $R/tests-wgmma.log; grep -E "^(FAILED|ERROR)" $R/tests-wgmma.log | head -8
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-wgmma-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
