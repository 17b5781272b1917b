#!/usr/bin/env bash
# The H200 dispatch table from every sweep it is built of (benchmarks.tune_dispatch --merge-runs / --bf16-runs;
# later runs' timings win at the same cell), into DIR (default /tmp/h200-table): copy DIR/tc_dispatch_table.h over
# csrc/cuda/gemm/tc_dispatch_table.h. Append a new sweep's JSON to FP16 or BF16 below; without sessions 55's and 56's,
# this reproduces the table session 52 left (without session 56's, session 55's; without session 68's, session 56's;
# without its run 2, its first; without session 69's, session 68's; without session 71's M = 12, session 69's;
# without session 72's bf16 sweep at M = 6-48, the table without the GEMV's bf16 column).
set -euo pipefail
cd "$(dirname "$0")/.."
B=docs/benchmarks/nvidia-h200
FP16=(2026-11-29-session36/run4a-tune.json.xz
      2026-11-29-session38/run1-tune-qwen.json.xz 2026-11-29-session38/run1-tune-llama.json
      2026-11-29-session42/run1-tune-qwen.json.xz 2026-11-29-session42/run1-tune-llama.json
      2026-11-30-session43/run2-tune-qwen.json.xz 2026-11-30-session43/run2-tune-llama.json
      2026-11-30-session44/run6-tune-qwen.json 2026-11-30-session44/run6-tune-llama.json
      2026-11-30-session47/run5-tune.json.xz 2026-11-30-session51/run3-tune.json.xz 2026-11-30-session52/run5-tune.json
      2026-12-01-session55/run3-tune.json.xz 2026-12-01-session56/run3-tune.json.xz
      2026-12-03-session68/m1-128-qwen3_lm_head.json
      2026-12-03-session68/past128-qwen3_lm_head-mid.json
      2026-12-03-session68/past128-qwen3_lm_head-large.json
      2026-12-03-session68/m1-128-llama8b_lm_head.json
      2026-12-03-session68/past128-llama8b_lm_head-mid.json
      2026-12-03-session68/past128-llama8b_lm_head-large.json
      2026-12-03-session68/m1-128-qwen25_7b_lm_head.json
      2026-12-03-session68/past128-qwen25_7b_lm_head-mid.json
      2026-12-03-session68/past128-qwen25_7b_lm_head-large.json
      2026-12-03-session68/run2-tune.json.xz
      2026-12-03-session68/run2-qwen3_lm_head.json
      2026-12-03-session68/run2-llama8b_lm_head.json
      2026-12-03-session68/run2-qwen25_7b_lm_head.json
      2026-12-03-session69/run2-tune.json.xz
      2026-12-03-session69/run2-qwen3_lm_head.json
      2026-12-03-session69/run2-llama8b_lm_head.json
      2026-12-03-session69/run2-qwen25_7b_lm_head.json
      2026-12-03-session71/run5-tune-m12.json.xz
      2026-12-03-session71/run5-qwen3_lm_head-m12.json
      2026-12-03-session71/run5-llama8b_lm_head-m12.json
      2026-12-03-session71/run5-qwen25_7b_lm_head-m12.json)
BF16=(2026-11-30-session43/run2-bf16-qwen.json.xz 2026-11-30-session43/run2-bf16-llama.json
      2026-11-30-session44/run6-bf16-qwen.json 2026-11-30-session44/run6-bf16-llama.json
      2026-11-30-session51/run3-bf16.json 2026-11-30-session52/run5-bf16.json
      2026-12-01-session55/run3-bf16.json.xz 2026-12-01-session56/run3-bf16.json.xz
      2026-12-03-session68/past128-qwen3_lm_head-bf16-mid.json
      2026-12-03-session68/past128-qwen3_lm_head-bf16-large.json
      2026-12-03-session68/past128-llama8b_lm_head-bf16-mid.json
      2026-12-03-session68/past128-llama8b_lm_head-bf16-large.json
      2026-12-03-session68/past128-qwen25_7b_lm_head-bf16-mid.json
      2026-12-03-session68/past128-qwen25_7b_lm_head-bf16-large.json
      2026-12-03-session72/run4-bf16-KV.json
      2026-12-03-session72/run4-bf16-Q.json
      2026-12-03-session72/run4-bf16-O.json
      2026-12-03-session72/run4-bf16-gateup.json
      2026-12-03-session72/run4-bf16-down.json
      2026-12-03-session72/run4-bf16-glm_shared_gu.json
      2026-12-03-session72/run4-bf16-glm_shared_dn.json
      2026-12-03-session72/run4-bf16-llama8b_gu.json
      2026-12-03-session72/run4-bf16-llama70b_gu.json
      2026-12-03-session72/run4-bf16-qwen3_lm_head.json
      2026-12-03-session72/run4-bf16-llama8b_lm_head.json
      2026-12-03-session72/run4-bf16-qwen25_7b_lm_head.json)
join() { local IFS=,; echo "${*/#/$B/}"; }
python3 -m benchmarks.tune_dispatch --merge-runs "$(join "${FP16[@]}")" --bf16-runs "$(join "${BF16[@]}")" \
  --out "${1:-/tmp/h200-table}" | tail -1 | cut -c1-200
