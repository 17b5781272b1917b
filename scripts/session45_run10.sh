#!/usr/bin/env bash
# Session 45, device run 10 (main's csrc, session 44's): scripts/sanitize_cases.py after its aids' context manager
# (45d5ba1): compute-sanitizer memcheck on the wgmma split cases (all four) and the persistent subset, synccheck on the
# persistent subset.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for c in "memcheck wgmma-splits" "memcheck wgmma-persistent" "synccheck wgmma-persistent"; do
  SAN_TAIL=2 sanitize_run ${c% *} 150 ${c#* }
done
# Nsight Compute's stall samples per SASS instruction of the 8B gate/up M = 1 GEMV (for the next look at its rate).
timeout 150 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -o $OUT/gemv8b-m1 \
  python3 scripts/ncu_gemm.py --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 > $OUT/ncu-run.log 2>&1
echo "ncu rc=$?"
timeout 60 ncu --import $OUT/gemv8b-m1.ncu-rep --page source --csv --print-source sass > $OUT/gemv8b-m1-sass.csv 2> $OUT/ncu-page.log
echo "ncu page rc=$? $(wc -l < $OUT/gemv8b-m1-sass.csv) lines"; head -c 600 $OUT/gemv8b-m1-sass.csv; tail -3 $OUT/ncu-page.log
# probe_gemv_slope.py after its review mends (PDL's previous setting restored, a label per cell): a short run.
timeout 90 python3 scripts/probe_gemv_slope.py --ks 4096 --ns 2048,14336 --out $OUT > $OUT/slope.log 2>&1
echo "slope rc=$?"; grep -E "^\||intercept" $OUT/slope.log | cut -c1-160
