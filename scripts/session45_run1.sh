#!/usr/bin/env bash
# Session 45, device run 1: the dense M = 1 GEMV's intercept and streaming rate (probe_gemv_slope.py), hot and
# cold, with and without PDL, next to cuBLAS fp16, K = 4096 and 8192.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_gemv_slope.py --ks 4096,8192 --ns 2048,4096,7168,14336,28672,57344 \
  --out $OUT > $OUT/slope.log 2>&1; echo "slope rc=$?"; cat $OUT/slope.log | cut -c1-200
# Per-SM activity of one M = 1 call (ncu, cold: caches flushed between passes): the spread of SMs' active cycles
# against the elapsed cycles says whether the idle share is a tail (some SMs done early) or start/end for all.
M="sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_elapsed.max,gpu__time_duration.sum"
M="$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__warps_active.avg.per_cycle_active,launch__grid_size"
M="$M,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active"
for s in "8b: --N 14336 --K 4096" "70b: --N 28672 --K 8192"; do
  label=${s%%:*}; a=${s#*:}
  timeout 120 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 --metrics $M \
    python3 scripts/ncu_gemm.py --op gemv_gemm --k 4 --M 1 $a > $OUT/ncu-$label.txt 2>&1
  echo "ncu $label rc=$?"; grep -E "sm__|gpu__|dram__|smsp__|launch__" $OUT/ncu-$label.txt | cut -c1-150
done
