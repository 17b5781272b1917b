#!/usr/bin/env bash
# Session 46, device run 1 (the first of two calls on one warm machine; two builds do not fit one call's 64 MiB): the
# dense x-staged GEMV with its index arithmetic before the PDL wait (the carried build). The GEMV's and PDL's GPU
# tests, one round of the A/B probe (gemv_gemm under its rule, label new1), then the build copied to ab_new/ for run 2.
# And for the next look: Nsight Compute's stall samples per SASS line (the new build) of Qwen3 gate/up at M = 8 (the
# x-resident GEMV) and of the grouped GEMV at 8 experts x 1 row (Qwen3 MoE gate/up), with their plans (NCU=0: not).
# Run 3 was `NCU=0 bash scripts/session46_run1.sh` on the next build (the codebook by cp.async).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SH=KV,Q,O,gateup,down,llama8b_gu,llama70b_gu; MS=1,2,4
timeout 150 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes $SH --ms $MS --label new1 \
  --out $OUT/ab-new1.json > $OUT/ab-new1.log 2>&1; echo "new1 rc=$?"
timeout 330 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv or grouped" tests/test_dependent_launch.py \
  > $OUT/tests-gemv.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/tests-gemv.log
python3 -c "import kbit; print('gu8', kbit._C._gemv_launch_plan(8, 5120, 2048, 4)); \
print('moe8x1', kbit._C._grouped_gemv_launch_plan(8, 8, 512, 2048, 4))"
[ "${NCU:-1}" = 0 ] || for c in "gu8:--M 8 --N 5120 --K 2048" "moe8x1:--experts 8 --M 1 --N 512 --K 2048"; do
  label=${c%%:*}
  timeout 100 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --import-source no -o /tmp/ncu-$label \
    python3 scripts/ncu_gemm.py --k 4 ${c#*:} > /tmp/ncu-$label.log 2>&1; echo "ncu $label rc=$?"
  timeout 60 ncu --import /tmp/ncu-$label.ncu-rep --page source --csv --print-source sass > $OUT/$label-sass.csv \
    2> /tmp/ncu-page-$label.log; echo "page $label rc=$? $(wc -l < $OUT/$label-sass.csv) lines"
done
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
grep -E "\||kbit from" $OUT/ab-new1.log
