#!/usr/bin/env bash
# Session 12, device run 1: programmatic dependent launch (PDL) for the GEMV. Build, the PDL
# tests, the GEMV op A/B with KBIT_PDL=1 vs 0 (back to back, and after an elementwise kernel:
# benchmarks.bench_pdl), the host cost per call (bench_dispatch, with the direct binding), then the
# GEMV / grouped tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_dependent_launch.py -q -x 2>&1 | tee $LOGS/tests-pdl.log | tail -3
for v in 1 0; do
  KBIT_PDL=$v timeout 100 python3 -m benchmarks.bench_pdl --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,4 \
    --out $LOGS/pdl$v > $LOGS/bench-pdl$v.log 2>&1; echo "== KBIT_PDL=$v"; grep " M=" $LOGS/bench-pdl$v.log
done
timeout 100 python3 -m benchmarks.bench_dispatch --out $LOGS/host --reps 15 > $LOGS/host.log 2>&1; grep "M=  1" $LOGS/host.log
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "gemv or grouped or graph or stream" 2>&1 \
  | tee $LOGS/tests-gemv.log | tail -3
cp $LOGS/tests-pdl.log $LOGS/tests-gemv.log $LOGS/host.log $OUT/
cp $LOGS/pdl1/pdl-*.json $OUT/pdl-on.json; cp $LOGS/pdl0/pdl-*.json $OUT/pdl-off.json
cp $LOGS/host/dispatch.json $OUT/host-cost.json
