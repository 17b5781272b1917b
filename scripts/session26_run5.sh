#!/usr/bin/env bash
# Session 26, device run 5 (carried build of 9a01cfe's sources): on the H200 the decode GEMV runs at the H100's
# times (8B M = 1 12.9 us, ~2.4 TB/s of ~4.3), so is it bound by the bytes it keeps in flight? The dense GEMV's
# launch settings at M = 1 and 4 (scripts/probe_gemv_launch.py: the rule; x resident with 2 / 3 / 4 ring
# stages; x staged; no spread), and the launch plans. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s26; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
python3 - > $R/plans.log 2>&1 <<'PY'
import kbit
for shape in [(14336, 4096), (28672, 8192), (5120, 2048), (2048, 10240)]:
    for M in (1, 4):
        print(shape, M, kbit._C._gemv_launch_plan(M, *shape, 4, "mma"))
        kbit._C._set_gemv_x_resident(2)
        for st in (2, 3, 4):
            kbit._C._set_gemv_resident_stages(st)
            print("  resident", st, kbit._C._gemv_launch_plan(M, *shape, 4, "mma"))
        kbit._C._set_gemv_x_resident(1); kbit._C._set_gemv_resident_stages(0)
PY
cat $R/plans.log | cut -c1-400
timeout 150 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,down,glm_shared_dn --ms 1,4 \
  --settings 1:1,1:1:2:2,1:1:2:3,1:1:2:4,1:1:0,1:0 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
