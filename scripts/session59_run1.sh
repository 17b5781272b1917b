#!/usr/bin/env bash
# Session 59, device run 1 (main's kernels, session 58's final build): session 58's untested K = 256 cases of the
# gated grouped call (test_moe_ops.py whole), the decode step of kbit.Experts, and the HF Qwen3-MoE model's decode
# tokens/s at k = 4 (last run in session 3, on the H100).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m pytest -q tests/test_moe_ops.py > $OUT/tests-moe-ops.log 2>&1
echo "test_moe_ops rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe-ops.log | tail -6 | cut -c1-300
timeout 60 python3 scripts/probe_experts_decode.py --out $OUT > $OUT/experts-decode.log 2>&1
echo "experts decode rc=$?"; grep -v Warn $OUT/experts-decode.log | tail -12 | cut -c1-250
timeout 300 python3 -m benchmarks.bench_hf_model --ks 4 --repeats 3 --out $OUT/hf_model > $OUT/hf-model.log 2>&1
echo "hf model rc=$?"; tail -8 $OUT/hf-model.log | cut -c1-300; cat $OUT/hf_model/hf_model.md 2>/dev/null | tail -5
