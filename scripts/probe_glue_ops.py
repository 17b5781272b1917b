"""What each of kbit.Experts' glue kernels costs a decode step (GPU machine): moe_route, moe_gather, silu_and_mul and
moe_combine each timed alone (a CUDA graph of that op over --calls routings, back to back: with PDL each launch
overlaps the previous one's tail), their chain without the grouped GEMMs, and a trivial ATen kernel (x.add_(0) on one
row: the graph's floor per kernel). Qwen3 MoE sizes (H = 2048, I = 512, top-8), CUDA-graph medians per call, us.

    python3 scripts/probe_glue_ops.py --experts 128 --tokens 1,4,16 [--json F]
"""
import argparse
import json

import torch

from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experts", default="128")
    ap.add_argument("--tokens", default="1,4,16")
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--calls", type=int, default=24, help="routings per graph")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    ops = torch.ops.kbit
    H, I, topk = args.hidden, args.intermediate, args.topk
    rows = []
    print("| E | tokens | trivial | moe_route | moe_gather | silu_and_mul | moe_combine | the four chained |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for E in (int(v) for v in args.experts.split(",")):
        for T in (int(v) for v in args.tokens.split(",")):
            g = torch.Generator().manual_seed(10 * E + T)
            x = torch.randn(T, H, generator=g).half().to(dev)
            h = torch.randn(T * topk, 2 * I, generator=g).half().to(dev)
            y = torch.randn(T * topk, H, generator=g).half().to(dev)
            cases = []
            for _ in range(args.calls):
                ids = torch.stack([torch.randperm(E, generator=g)[:topk] for _ in range(T)]).to(dev)
                w = torch.rand(T, topk, generator=g).half().to(dev)
                cases.append((ids, w) + tuple(ops.moe_route(ids, E)))

            def t(label, fn):
                return timer.measure([lambda c=c: fn(*c) for c in cases], Work(0, 0, f"{label} {E} {T}")).median_us

            row = dict(E=E, tokens=T, topk=topk, H=H, I=I)
            row["trivial"] = t("trivial", lambda *c: x[:1].add_(0))
            row["moe_route"] = t("route", lambda ids, w, off, tok, pr: ops.moe_route(ids, E))
            row["moe_gather"] = t("gather", lambda ids, w, off, tok, pr: ops.moe_gather(x, tok))
            row["silu_and_mul"] = t("silu", lambda *c: ops.silu_and_mul(h))
            row["moe_combine"] = t("combine", lambda ids, w, off, tok, pr: ops.moe_combine(y, w, ids, pr, E))
            row["chain"] = t("chain", lambda ids, w, *_: chain(ops, ids, w, x, h, y, E))
            rows.append(row)
            print(f"| {E} | {T} | " + " | ".join(f"{row[k]:.2f}" for k in ("trivial", "moe_route", "moe_gather",
                                                                          "silu_and_mul", "moe_combine", "chain"))
                  + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**run_meta(info), "rows": rows}, f, indent=1)


def chain(ops, ids, w, x, h, y, E):
    """The glue of one step without its GEMMs: route, gather, activation (of h: the gate/up output's shape), combine
    (of y: the down output's shape) on the route's rows."""
    _, tok, pr = ops.moe_route(ids, E)
    ops.moe_gather(x, tok)
    ops.silu_and_mul(h)
    return ops.moe_combine(y, w, ids, pr, E)


if __name__ == "__main__":
    main()
