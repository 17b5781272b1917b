"""The grouped GEMV's compacted MoE call (benchmarks.run's MoE sweep: the active experts' weights alone, one row
each) over a range of active experts, with the warps per unit by the rule and forced
(kbit._C._set_gemv_unit_warps), and each launch's plan (kbit._C._grouped_gemv_launch_plan). Session 59 found the
call at 10 experts x 1 row 1.5 us slower than at 8 (5.80 against 4.3 us): a step in the plan, or in the waves?
Cold (rotated weight copies), CUDA-graph medians (benchmarks/harness.py).

    python3 scripts/probe_grouped_active.py --active 8,9,10,12,16 --unit-warps 0,1,2,4,8 --out DIR
"""
import argparse
import json
import os

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import cold_copies


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="moe_gu,moe_dn")
    ap.add_argument("--active", default="8,9,10,12,16")
    ap.add_argument("--unit-warps", default="0,1,2,4,8", help="0: the rule")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    warps = [int(v) for v in args.unit_warps.split(",")]
    rows_out = []
    print("| shape | experts x 1 | " + " | ".join(f"wpu {w or 'rule'} (us)" for w in warps) + " | the rule's plan |")
    print("|---|---:|" + "---:|" * len(warps) + "---|")
    for name in args.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        for E in (int(v) for v in args.active.split(",")):
            g = torch.Generator(device=dev).manual_seed(E + N)
            qw = kbit.quantize(torch.randn(E, N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5,
                               k=args.k)
            a = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            copies = [a] + [tuple(v.clone() for v in a) for _ in range(
                cold_copies(sum(v.numel() * v.element_size() for v in a), info["l2_bytes"]) - 1)]
            x = torch.randn(E, K, device=dev, dtype=torch.float16, generator=g)
            off = torch.arange(0, E + 1, device=dev, dtype=torch.int32)
            times, plans = {}, {}
            for w in warps:
                prev = kbit._C._set_gemv_unit_warps(w)
                try:
                    plans[w] = kbit._C._grouped_gemv_launch_plan(E, E, N, K, args.k)
                    times[w] = timer.measure([lambda c=c: torch.ops.kbit.grouped_gemm(x, *c, off, args.k)
                                              for c in copies], Work(0, 0, f"{name} {E} x 1 wpu {w}")).median_us
                finally:
                    kbit._C._set_gemv_unit_warps(prev)
            rule = plans.get(0, plans[warps[0]])  # (the rule's plan where 0 was asked for)
            rows_out.append(dict(shape=name, N=N, K=K, experts=E, rows=1, us_by_unit_warps=times,
                                 plans={str(w): dict(p) for w, p in plans.items()}))
            keys = ("grid", "ctas_per_sm", "warps", "warps_per_unit", "token_slots", "schedule")
            brief = ", ".join(f"{k} {rule[k]}" for k in keys if k in rule)
            print(f"| {name} | {E} | " + " | ".join(f"{times[w]:.2f}" for w in warps) + f" | {brief} |", flush=True)
            del copies, qw
            torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "grouped-active.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "rows": rows_out}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
