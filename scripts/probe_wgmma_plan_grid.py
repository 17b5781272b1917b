"""Does the wgmma rule leave time on the table? For each (shape, M): the op under the rule, and under every distinct
plan the tuning aids can force from a grid of token chunks (--tokens) x K-splits (--splits), alternating round by
round in one process (k = --k, fp16 x, cold L2, CUDA-graph medians, the tuning sweeps' timer), with cuBLAS fp16
(F.linear) on the unquantized weight as the yardstick. Prints per cell the rule's plan and time, the fastest forced
plan and its time / the rule's, and cuBLAS / rule; writes every timing to --out.

    python3 scripts/probe_wgmma_plan_grid.py --cells Q:136,272 gateup:1024 --out grid.json
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import tuning_aids, tuning_setup
from benchmarks.weights import shape_weight_copies

PLAN_KEYS = ("tokens", "row_tiles", "splits", "ctas", "grid_ctas", "whole_units")


def plan_label(p):
    return (f"{p['tokens']}x{p['row_tiles'] * 16} s{p['splits']} ctas {p['ctas']}/{p['grid_ctas']} "
            f"whole {p['whole_units']}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cells", nargs="+", required=True, help="SHAPE:M,M,...")
    p.add_argument("--tokens", default="80,96,112,128,144,160")
    p.add_argument("--splits", default="1,2,3,4,6,8")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    dev, info, timer = tuning_setup()
    rows = []
    for cell in a.cells:
        name, ms = cell.split(":")
        shape = S.SHAPES[name]
        N, K = shape.N, shape.K
        _, W_copies, copies = shape_weight_copies(shape, a.k, dev, info["l2_bytes"])
        for M in map(int, ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            rule = kbit._C._wgmma_launch_plan(M, N, K, a.k)
            # the candidates: each aid setting whose plan differs from the rule's and from every earlier one
            candidates = {"rule": ({}, rule)}
            seen = [tuple(rule[key] for key in PLAN_KEYS)]
            for tokens in map(int, a.tokens.split(",")):
                for splits in map(int, a.splits.split(",")):
                    aids = {"wgmma_tokens": tokens, "wgmma_splits": splits}
                    with tuning_aids(**aids):
                        plan = kbit._C._wgmma_launch_plan(M, N, K, a.k)
                    sig = tuple(plan[key] for key in PLAN_KEYS)
                    if sig not in seen:
                        seen.append(sig)
                        candidates[f"t{tokens}s{splits}"] = (aids, plan)
            times = {label: [] for label in candidates}
            times["cuBLAS"] = []
            labels = list(times)
            for r in range(a.rounds):
                for label in (labels if r % 2 == 0 else labels[::-1]):
                    if label == "cuBLAS":
                        fns = [lambda W=W: F.linear(x, W) for W in W_copies]
                        times[label].append(timer.measure(fns, Work(0, 0, f"{name} {M} cuBLAS")).median_us)
                        continue
                    with tuning_aids(**candidates[label][0]):
                        fns = [lambda c=c: torch.ops.kbit.wgmma_gemm(x, *c, a.k) for c in copies]
                        times[label].append(timer.measure(fns, Work(0, 0, f"{name} {M} {label}")).median_us)
            med = {label: statistics.median(v) for label, v in times.items()}
            forced = [label for label in candidates if label != "rule"]
            best = min(forced, key=med.get) if forced else "rule"
            print(f"{name} M={M} | rule {plan_label(rule)}: {med['rule']:.2f} us | best forced {best} "
                  f"({plan_label(candidates[best][1])}): {med[best]:.2f} ({med[best] / med['rule']:.3f}) | cuBLAS "
                  f"{med['cuBLAS']:.2f} ({med['cuBLAS'] / med['rule']:.3f}x of rule) | {len(forced)} forced plans",
                  flush=True)
            rows.append({"shape": name, "M": M, "k": a.k, "us": times,
                         "plans": {label: plan for label, (_, plan) in candidates.items()}})
        del copies, W_copies
    with open(a.out, "w") as f:
        json.dump({"device": info, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
