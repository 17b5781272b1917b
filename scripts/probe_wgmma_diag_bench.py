"""The wgmma op under the rule (k = --k, default 4; x of --dtype, default fp16; cold L2, CUDA-graph medians, the
harness's timer) on a diagnostic build (scripts/wgmma_trace_patch.py + scripts/wgmma_diag_patch.py) under each of the
diag patch's modes, alternating the modes round by round in one process: what each mode's change to the copies and
waits is worth in the benchmark's setting (graph replays, persistent CTAs), where scripts/probe_wgmma_trace.py times
one call after an L2 flush. Modes 1-4 and 6-8 compute wrong results (timing only). The modes' order is reversed every
other round (session 50's runs 4 and 7 ran them in one order, mode 0 first, on weights of their own seeded copies,
since benchmarks.weights.shape_weight_copies; their JSONs have no build stamp: the records README names it).

    python3 scripts/probe_wgmma_diag_bench.py --shapes Q,down --ms 256,1024 --diags 0,2,8 --rounds 2 --out d.json

With --aid NAME the values of --diags are a tuning aid's instead (kbit._C._set_NAME, on any build; the aid restored
to 0 after), e.g. the token chunk: --aid wgmma_tokens --diags 128,96.
"""
import argparse
import json
import os
import statistics

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import shape_weight_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="512")
    p.add_argument("--diags", default="0,2")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--aid", default=None, help="a tuning aid (kbit._C._set_<aid>) in place of the diag switch")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"), help="x's dtype")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    dev, info, timer = tuning_setup()
    diags = [int(d) for d in a.diags.split(",")]
    switch = getattr(kbit._C, f"_set_{a.aid}") if a.aid else kbit._C._wgmma_diag_set
    rows = []
    for name in a.shapes.split(","):
        K = S.SHAPES[name].K
        _, _, copies = shape_weight_copies(S.SHAPES[name], a.k, dev, info["l2_bytes"])
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=getattr(torch, a.dtype))
            times = {d: [] for d in diags}
            for r in range(a.rounds):
                for d in (diags if r % 2 == 0 else diags[::-1]):  # (no mode always first)
                    switch(d)
                    times[d].append(timer.measure([lambda c=c: torch.ops.kbit.wgmma_gemm(x, *c, a.k) for c in copies],
                                                  Work(0, 0, f"{name} {M} diag {d}")).median_us)
            switch(0)
            base = statistics.median(times[diags[0]])
            cells = " | ".join(f"{d}: {statistics.median(times[d]):.2f} ({statistics.median(times[d]) / base:.3f})"
                               for d in diags)
            print(f"{name} M={M} | {cells}", flush=True)
            rows.append({"shape": name, "M": M, "us": {str(d): times[d] for d in diags}})
        del copies
    stamp = os.path.join(os.path.dirname(kbit._C.__file__), "_C.stamp")
    build = open(stamp).read().strip() if os.path.exists(stamp) else None
    with open(a.out, "w") as f:
        json.dump({"device": info, "build_stamp": build, "extension": kbit._C.__file__, "aid": a.aid or "wgmma_diag",
                   "k": a.k, "dtype": a.dtype, "diags": diags, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
