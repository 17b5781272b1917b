#!/usr/bin/env bash
# Session 16, device run 3 (carried build of 662a199 + this script): warps per unit with the new
# unit slots (8B gate/up: 16 warps x 1 slot, the rule, against 8 x 2; Qwen3 gate/up M = 16: 8 x 2
# against 4 x 4); an Nsight Compute stall profile of the grouped GEMV at 256 experts x 1 token (down,
# K = 512, against gate/up, the same bytes); the dispatch sweep with the slotted GEMV; then every test
# file but test_cuda_gemm.py (run 2 ran it on this tree). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r3; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu --ms 8,16 \
  --settings 1:1:1:0:8:0,1:1:1:0:8:8 --reps 2 --out $R/probe-8b > $R/probe-8b.log 2>&1; grep "^|" $R/probe-8b.log
timeout 60 python3 scripts/probe_gemv_launch.py --shapes gateup --ms 16,24,32 \
  --settings 1:1:1:0:8:0,1:1:1:0:8:4 --reps 2 --out $R/probe-gu > $R/probe-gu.log 2>&1; grep "^|" $R/probe-gu.log
OUT=$R KERNEL=scalar_gemv STALLS=1 SHAPES="moe_dn_256x1: --experts 256 --M 1 --N 2048 --K 512
moe_gu_256x1: --experts 256 --M 1 --N 512 --K 2048" timeout 150 bash scripts/ncu_gemm.sh 2>&1 | tail -80
TUNE_TIMEOUT=200 timeout 210 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -1 $R/tune.log | cut -c1-100
timeout 300 python3 -m pytest tests -q --maxfail=20 -rs --durations=12 --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1
tail -22 $R/tests-rest.log
tar -czf $OUT/run3.tar.gz -C $R .; cp $R/tests-rest.log $OUT/; cp $R/tune/tc_dispatch_table.h $OUT/ 2>/dev/null
