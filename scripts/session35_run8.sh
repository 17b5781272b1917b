#!/usr/bin/env bash
# Session 35, device run 8 (the final csrc: the review's mends, comments and the aid's docstring in csrc): the wgmma
# staging-rule, plan, graph, first-stage and forced-splits tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s35; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -k "staging_rule or wgmma_gemm_graph or launch_plan or first_stage_alone or wgmma_gemm_forced_splits or wgmma_aids" \
  > $R/tests.log 2>&1; echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -6 | cut -c1-300
python3 -c "import kbit; h = kbit._C._set_wgmma_x_staging.__doc__; print(h); assert 'at most 2' in h" > $R/doc.log 2>&1; echo "doc rc=$?"
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
