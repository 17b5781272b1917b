#!/usr/bin/env bash
# Session 21, device run 5 (branch s21-sparse-moe): the grouped GEMV's per-warp schedule for sparse
# routing (E > 32 experts, T <= 32 rows) and the chunk-rows tuning aid: the grouped tests, then the
# sparse MoE probe (all-E call, compacted call, fp16 bmm) under the per-CTA schedule (form 0) and the
# default, and with 1 / 4 rows per chunk.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s21; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "grouped or one_warp" > $R/tests-grouped.log 2>&1
tail -3 $R/tests-grouped.log; grep -E "^(FAILED|ERROR)|Error" $R/tests-grouped.log | head -10
timeout 200 python3 scripts/probe_moe_sparse.py --experts 128,512 --active 8 --rows 1,4 --forms 0,2 --chunk-rows 0,4 \
  --out $R/sparse > $R/sparse.log 2>&1; grep "^|" $R/sparse.log; tail -5 $R/sparse.log | grep -v "^|"
so=kbit/_C.cpython-312-x86_64-linux-gnu.so
for f in _ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi4ELi2ELb1ELNS0_10GemvDecodeE2ELb0EEEvNS0_10TcGemmArgsE \
         _ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi4ELi1ELb1ELNS0_10GemvDecodeE2ELb0EEEvNS0_10TcGemmArgsE; do
  cuobjdump -sass -fun $f $so > $R/sass-$(echo $f | cut -c40-60).txt 2>&1
  echo "$f: $(grep -c '' $R/sass-$(echo $f | cut -c40-60).txt) lines; spills at:"; grep -n "STL\|LDL" $R/sass-$(echo $f | cut -c40-60).txt | head -6
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
