#!/usr/bin/env bash
# Session 57, device run 6 (as it ran, from the `run` command; 41874ae's build): Nsight Compute on one decode step's
# four glue kernels (moe_route, moe_gather, silu_and_mul, moe_combine; 128 experts, 1 token, top-8, H = 2048, I = 512):
# duration, SM cycles, warp instructions, L2 and DRAM reads of the second of three rounds.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
cat > /tmp/g.py <<'PY'
import torch, kbit
ops = torch.ops.kbit
g = torch.Generator().manual_seed(1)
E, T, topk, H, I = 128, 1, 8, 2048, 512
x = torch.randn(T, H, generator=g).half().cuda()
h = torch.randn(T * topk, 2 * I, generator=g).half().cuda()
y = torch.randn(T * topk, H, generator=g).half().cuda()
ids = torch.stack([torch.randperm(E, generator=g)[:topk] for _ in range(T)]).cuda()
w = torch.rand(T, topk, generator=g).half().cuda()
for _ in range(3):
    off, tok, pr = ops.moe_route(ids, E)
    ops.moe_gather(x, tok)
    ops.silu_and_mul(h)
    ops.moe_combine(y, w, ids, pr, E)
torch.cuda.synchronize()
PY
timeout 200 ncu --kernel-name regex:"moe_|silu" --launch-skip 4 --launch-count 4 \
  --metrics gpu__time_duration.sum,sm__cycles_active.max,smsp__inst_executed.sum,launch__grid_size,launch__block_size,smsp__cycles_active.max,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
  python3 /tmp/g.py > $OUT/ncu-glue.log 2>&1; echo rc=$?
