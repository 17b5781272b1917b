#!/usr/bin/env bash
# Session 48, device run 11: where the x-resident GEMV's time goes now (session 47 run 8's Nsight Compute command on
# the final build): Qwen3 gate/up at M = 8 and 16, one call each under the rule; the details page as text, the SASS
# samples as CSV for scripts/ncu_sass_summary.py (gpu_build.sh's ncu_profile, factored out of this script after the run
# with the same commands and files).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
python3 -c "import kbit; [print(n, M, dict(kbit._C._gemv_launch_plan(M, N, K, 4))) for n, M, N, K in
(('gu', 8, 5120, 2048), ('gu', 16, 5120, 2048))]"
for c in "gu8:--M 8 --N 5120 --K 2048" "gu16:--M 16 --N 5120 --K 2048"; do
  ncu_profile "${c%%:*}" --op gemv_gemm --k 4 ${c#*:}
done
