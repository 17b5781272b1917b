#!/usr/bin/env bash
# Session 60, run 5: the by-slot grouped GEMV as a kernel instantiation of its own (run 3 had it as a runtime flag in
# the 1-slot grouped kernel, whose routed calls ran 4-9% slower against run 4's base on that machine): the MoE sweep at
# 8-32 experts x 1 row and the Experts decode step, slot path against routed (run 6: the base's, on this machine); the
# slot op's, Experts' and glue tests, the opcheck subset, and the grouped / moe / silu GEMV tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,9,10,12,16,24,32 --sweep-ms 1 --out $OUT/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; grep -h "^| moe_.* x " $OUT/moe/*/results-full.md | sort -u | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'
echo
timeout 150 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,2,4 --slot-ab 3 \
  --out $OUT/experts-top8 > $OUT/experts-top8.log 2>&1
echo "experts top8 rc=$?"; grep -E "^\| [0-9]|slot A/B" $OUT/experts-top8.log | cut -c1-150
timeout 240 python3 -m pytest -q tests/test_moe_slots.py tests/test_nn.py tests/test_opcheck.py \
  -k "slots or optional or experts or moe_combine" > $OUT/tests-slots.log 2>&1
echo "tests slots rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-slots.log | tail -6 | cut -c1-300
timeout 240 python3 -m pytest -q tests/test_cuda_gemm.py tests/test_moe_ops.py -k "grouped or moe or silu" \
  > $OUT/tests-grouped.log 2>&1
echo "tests grouped rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-grouped.log | tail -6 | cut -c1-300
tar -C "$OUT" -czf /tmp/session60_run5.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session60_run5.tgz "$OUT"/
