"""What an MoE router's top-k costs a decode step (GPU machine): HF Qwen3-MoE's router after its linear (softmax in
fp32, torch.topk, the renormalisation, the cast: transformers 5.24's Qwen3MoeTopKRouter.forward) against
kbit.router_topk, each alone in a CUDA graph of --calls back-to-back calls on fresh logits, and the router with its
linear (bf16 weight [E, H] on x [T, H]) both ways. CUDA-graph medians per call, us.

    python3 scripts/probe_router.py --experts 128,512 --topk 8,10 --tokens 1,4 [--json F]
"""
import argparse
import json

import torch
from torch.nn import functional as F

import kbit
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup


def hf_topk(logits, top_k):
    probs = torch.softmax(logits, dtype=torch.float, dim=-1)
    values, idx = torch.topk(probs, top_k, dim=-1)
    values /= values.sum(dim=-1, keepdim=True)
    return values.to(logits.dtype), idx


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experts", default="128,512")
    ap.add_argument("--topk", default="8,10")
    ap.add_argument("--tokens", default="1,4")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=24)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    rows = []
    print("| E | top-k | tokens | HF top-k | kbit.router_topk | HF router (linear + top-k) | linear + kbit |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for E, top_k in zip((int(v) for v in args.experts.split(",")), (int(v) for v in args.topk.split(","))):
        for T in (int(v) for v in args.tokens.split(",")):
            g = torch.Generator().manual_seed(7 * E + T)
            weight = (torch.randn(E, args.hidden, generator=g) * args.hidden ** -0.5).bfloat16().to(dev)
            xs = [torch.randn(T, args.hidden, generator=g).bfloat16().to(dev) for _ in range(args.calls)]
            logits = [F.linear(x, weight) for x in xs]
            for lg in logits:  # the same experts either way (ties aside)
                a, b = hf_topk(lg, top_k), kbit.router_topk(lg, top_k)
                p = torch.softmax(lg.float(), -1)
                assert torch.equal(p.gather(1, a[1]).sort(-1).values, p.gather(1, b[1]).sort(-1).values)

            def t(label, fn, inputs):
                return timer.measure([lambda c=c: fn(c) for c in inputs], Work(0, 0, f"{label} {E} {T}")).median_us

            row = dict(E=E, top_k=top_k, tokens=T, hidden=args.hidden)
            row["hf_topk"] = t("hf", lambda lg: hf_topk(lg, top_k), logits)
            row["kbit_topk"] = t("kbit", lambda lg: kbit.router_topk(lg, top_k), logits)
            row["hf_router"] = t("hf+linear", lambda x: hf_topk(F.linear(x, weight), top_k), xs)
            row["kbit_router"] = t("kbit+linear", lambda x: kbit.router_topk(F.linear(x, weight), top_k), xs)
            rows.append(row)
            print(f"| {E} | {top_k} | {T} | " + " | ".join(f"{row[k]:.2f}" for k in ("hf_topk", "kbit_topk",
                                                                                     "hf_router", "kbit_router"))
                  + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**run_meta(info), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
