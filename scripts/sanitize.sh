#!/usr/bin/env bash
# compute-sanitizer over every kbit CUDA kernel (scripts/sanitize_cases.py), one run per
# tool. Run on the GPU machine after a build; logs land in ${OUT:-out}/sanitize_<tool>.log.
# Exit status: non-zero if any tool reports an error (initcheck: except its reads of cuBLAS's
# output in the dequantize + cuBLAS epilogue, scripts/initcheck_known.py).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}  # sanitize_cases.py imports benchmarks.session
status=0
for tool in ${TOOLS:-memcheck racecheck initcheck synccheck}; do
  start=$(date +%s)
  # the GEMM keeps 32 mbarriers per CTA, some 8000 alive at once: raise the tools' tracking limit
  compute-sanitizer --tool "$tool" --error-exitcode 99 --target-processes all --num-cuda-barriers ${NUM_CUDA_BARRIERS:-100000} \
    python3 scripts/sanitize_cases.py > "$OUT/sanitize_$tool.log" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases" "$OUT/sanitize_$tool.log" | tail -2 | tr '\n' ' ')
  echo "$tool: rc=$rc in $(( $(date +%s) - start )) s: $summary"
  # initcheck cannot see what cuBLAS writes (scripts/initcheck_cublas.py shows it without kbit):
  # its reports of the dequantize + cuBLAS epilogue reading that product are set aside, nothing else
  if [ "$tool" = initcheck ] && [ $rc -eq 99 ] && python3 scripts/initcheck_known.py "$OUT/sanitize_$tool.log"; then
    rc=0
  fi
  [ $rc -ne 0 ] && { status=1; grep -m 20 -E "=========  (Invalid|Race|Uninitialized|Barrier|Error)|at .*kbit" "$OUT/sanitize_$tool.log"; }
done
exit $status
