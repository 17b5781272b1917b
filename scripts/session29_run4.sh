#!/usr/bin/env bash
# Session 29, device run 4 (carried build): the 8-slot x-resident GEMV at k = 4 against k = 3 in the same geometry
# (one CTA of four 4-warp slots, 3 ring stages: k = 3 with the resident stages set to 3; run 1: 14.50 against 17.21
# us on 8B gate/up M = 8). The stall reasons (Nsight Compute), and k = 4 at 2 ring stages, 8-warp CTAs.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
for k in 4 3; do
  timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu --ms 4,8 --k $k \
    --settings 1:1,1:1:1:2,1:1:1:3,1:1:1:0:2,1:1:1:2:2 --reps 3 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
python3 - > $R/plans.log 2>&1 <<'PY'
import json
for k in (4, 3):
    for row in json.load(open(f"/tmp/s29/r4/gemv-k{k}/gemv-launch.json"))["rows"]:
        for s, p in row["plans"].items():
            print(k, row["M"], s, {f: p[f] for f in ("grid", "warps", "warps_per_unit", "ring_stages", "ctas_per_sm", "smem_bytes")})
PY
cat $R/plans.log
METRICS="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,sm__cycles_active.avg"
for cfg in "k3m8s3:3:8:3" "k4m8s3:4:8:3" "k4m8s2:4:8:2" "k4m4:4:4:0"; do
  IFS=: read label k M st <<< "$cfg"
  timeout 60 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --metrics "$METRICS" python3 scripts/ncu_gemm.py --op gemv_gemm --k $k --M $M --N 14336 \
    --K 4096 --aid gemv_resident_stages=$st > $R/ncu_8b_$label.txt 2>&1
  echo "== $label rc=$?"
  grep -E "Duration|stalled" $R/ncu_8b_$label.txt | awk '$NF+0 >= 0.05 || /Duration/' | tr -s ' ' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
