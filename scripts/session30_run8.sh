#!/usr/bin/env bash
# Session 30, device run 8 (carried build: main's): the wgmma kernel's x staged by its producers (with refills) against
# the rule's image pass on the shapes where the rule takes the image at small M (Llama-3 8B and 70B gate/up, GLM shared
# down: more groups per CTA than stages). The rule (session 18) was measured at M = 128 (70B: 158 vs 290 us); at M <= 32
# a group's x is 8-16 KB per CTA, and the image is a kernel of its own before the GEMM. Rounds: rule, staged, staged, rule.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s30; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
python3 -c "
import kbit
for name, (N, K) in dict(l8b=(14336, 4096), l70b=(28672, 8192), glm_dn=(2048, 10240)).items():
    print(name, [(M, kbit._C._wgmma_launch_plan(M, N, K, 4)) for M in (8, 16, 32, 64)])" > $R/plans.log 2>&1; cat $R/plans.log
round=0
for mode in 0 1 1 0; do
  round=$((round + 1))
  timeout 60 python3 -c "import sys, kbit; kbit._C._set_wgmma_x_staging($mode); from benchmarks import ab_paths; sys.argv=['x','--ops','wgmma_gemm','--shapes','llama8b_gu,llama70b_gu,glm_shared_dn','--ms','8,16,32,64','--ks','4','--out','$R/$round-x$mode']; ab_paths.main()" > $R/$round-x$mode.log 2>&1
  echo "$round x$mode rc=$?"
done
python3 scripts/ab_table.py rule-1=$R/1-x0 staged-1=$R/2-x1 staged-2=$R/3-x1 rule-2=$R/4-x0 | tee $R/ab.md
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
