#!/usr/bin/env bash
# Session 60, run 3: kbit::grouped_gemm_slots (kbit.Experts' decode without routing: one grouped GEMV kernel per call
# by slot) on the GPU: its tests, kbit.Experts' tests and the MoE glue's, the opcheck of the optional arguments; then
# the Experts decode step, slot path against the routed form alternating (probe_experts_decode --slot-ab), the MoE
# sweep at 8-32 experts x 1 row (the compacted grouped call: the 1-slot kernel's routed path, against run 1), and the
# HF Qwen3-MoE model compiled + graph (lm_head quantized) with the slot path and routed.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 -m pytest -q tests/test_moe_slots.py tests/test_moe_ops.py tests/test_opcheck.py \
  -k "slots or optional or moe_ or silu or route or combine or gather" > $OUT/tests-slots.log 2>&1
echo "tests slots rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-slots.log | tail -6 | cut -c1-300
timeout 120 python3 -m pytest -q tests/test_nn.py -k "experts" > $OUT/tests-nn.log 2>&1
echo "tests nn rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-nn.log | tail -4 | cut -c1-300
timeout 150 python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,2,4 --slot-ab 3 \
  --out $OUT/experts-top8 > $OUT/experts-top8.log 2>&1
echo "experts top8 rc=$?"; grep -E "^\| [0-9]|slot A/B" $OUT/experts-top8.log | cut -c1-150
timeout 100 python3 scripts/probe_experts_decode.py --experts 512 --tokens 1,3 --topk 10 --slot-ab 3 \
  --out $OUT/experts-top10 > $OUT/experts-top10.log 2>&1
echo "experts top10 rc=$?"; grep -E "^\| [0-9]|slot A/B" $OUT/experts-top10.log | cut -c1-150
timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,9,10,12,16,24,32 --sweep-ms 1 --out $OUT/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; grep -h "^| moe_.* x " $OUT/moe/*/results-full.md | sort -u | cut -d'|' -f2-4 | tr -s ' ' | tr '\n' ';'
echo
for form in slots routed; do
  extra=""; [ $form = routed ] && extra="--experts-routed"
  timeout 200 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile $extra \
    --out $OUT/hf_$form > $OUT/hf-$form.log 2>&1
  echo "hf $form rc=$?"; grep -A4 "graph decode tok/s" $OUT/hf_$form/hf_model.md | cut -c1-250
done
# (at most 8 files come back: all of them in one archive)
tar -C "$OUT" -czf /tmp/session60_run3.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session60_run3.tgz "$OUT"/
