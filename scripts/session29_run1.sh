#!/usr/bin/env bash
# Session 29, device run 1 (carried build, main's kernels): the GEMV at M = 5-16 (#6's M = 8 / 16 rows) after
# session 28's ring offsets: the rule against x resident at 4 / 8 warps per unit and x staged, with the small-M
# (mma) and wgmma kernels and cuBLAS next to it; which path the dispatcher names; x resident on 8B at k = 2, 3, 5,
# M = 2-4 (unmeasured in session 28).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
python3 - <<'PY' > $R/dispatch.log 2>&1
import kbit
for name, N, K in [("8B", 14336, 4096), ("70B", 28672, 8192), ("gateup", 5120, 2048), ("glm_gu", 10240, 2048),
                   ("Q", 4096, 2048), ("down", 2048, 5120)]:
    for k in (2, 3, 4, 5):
        print(name, k, [(M, kbit._C.gemm_dispatch(M, N, K, k, 0)[0]) for M in (2, 4, 5, 8, 12, 16, 24, 32)])
PY
cat $R/dispatch.log | cut -c1-400
timeout 150 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,glm_shared_gu,Q,down \
  --ms 5,8,12,16 --k 4 --settings 1:1,1:1:2:0:8:4,1:1:2:0:8:8,1:1:0 --baselines fp16,mma,wgmma --reps 3 \
  --out $R/gemv-m8 > $R/gemv-m8.log 2>&1
echo "gemv-m8 rc=$?"; grep "^|" $R/gemv-m8.log
for k in 2 3 5; do
  timeout 50 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu --ms 2,3,4,8 --k $k \
    --settings 1:1,1:1:2:0:8:4,1:1:2:0:8:8 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
tar -czf $OUT/run${RUN:-1}.tar.gz -C $R .
