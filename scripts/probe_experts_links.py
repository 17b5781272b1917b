"""What each kernel of a kbit.Experts decode step costs the step (GPU machine): the step with one kernel's
work replaced by its precomputed output (the same routings), against the whole step. The difference is that
kernel's marginal cost in the PDL chain: what fusing it into a neighbour could save at most. "step" runs moe_route
and moe_gather, "fused" moe_route_gather in their place (kbit.Experts' forward since session 58), "gated" that and
grouped_gemm_silu_and_mul on the gate/up weight's rows interleaved in 8s in place of the gate/up call and silu_and_mul.
"fused" and "gated" outputs are checked against "step"'s (bitwise) before the timing. Qwen3 MoE expert
shapes (H = 2048, I = 512), top-k of a few tokens over E experts, a new routing per call, CUDA-graph medians
(benchmarks/harness.py), forms alternated over rounds in one process.

    python3 scripts/probe_experts_links.py --experts 128 --tokens 1,4,16 --rounds 3 --out DIR
"""
import argparse
import json
import os
import statistics

import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup

FORMS = ("step", "fused", "gated", "no_route", "no_gather", "no_route_gather", "no_silu", "no_combine", "grouped_only")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experts", default="128")
    ap.add_argument("--tokens", default="1,4,16")
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--calls", type=int, default=24, help="routings per graph")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    H, I, topk = args.hidden, args.intermediate, args.topk
    ops = torch.ops.kbit
    rows = []
    print("| E | tokens | " + " | ".join(FORMS) + " |")
    print("|---:|---:|" + "---:|" * len(FORMS))
    for E in (int(v) for v in args.experts.split(",")):
        g = torch.Generator(device=dev).manual_seed(E)
        gate_up = torch.randn(E, 2 * I, H, device=dev, dtype=torch.float16, generator=g) * H ** -0.5
        down = torch.randn(E, H, I, device=dev, dtype=torch.float16, generator=g) * I ** -0.5
        ex = kbit.Experts.from_weights(gate_up, down, k=args.k)
        del gate_up, down
        gu, dn = ex.gate_up_proj.quantized(), ex.down_proj.quantized()
        gu_gated = ex.gate_up_proj.interleaved()  # gate/up rows interleaved in 8s (grouped_gemm_silu_and_mul's)
        for T in (int(v) for v in args.tokens.split(",")):
            x = torch.randn(T, H, device=dev, dtype=torch.float16, generator=g)
            routes = []
            for c in range(args.calls):
                gen = torch.Generator().manual_seed(1000 * E + 10 * T + c)
                ids = torch.stack([torch.randperm(E, generator=gen)[:topk] for _ in range(T)]).to(dev)
                w = torch.rand(T, topk, generator=gen).softmax(-1).to(dev, torch.float16)
                off, row_token, pair_row = ops.moe_route(ids, E)
                xs = ops.moe_gather(x, row_token)
                h = kbit.grouped_gemm(xs, gu, off)
                a = ops.silu_and_mul(h)
                y = kbit.grouped_gemm(a, dn, off)
                routes.append(dict(ids=ids, w=w, off=off, row_token=row_token, pair_row=pair_row, xs=xs, a=a, y=y))

            def step(r, form):
                if form in ("fused", "gated"):
                    off, _, pair_row, xs = ops.moe_route_gather(r["ids"], E, x)
                elif form in ("no_route", "no_route_gather", "grouped_only"):
                    off, row_token, pair_row = r["off"], r["row_token"], r["pair_row"]
                else:
                    off, row_token, pair_row = ops.moe_route(r["ids"], E)
                if form in ("no_gather", "no_route_gather", "grouped_only"):
                    xs = r["xs"]
                elif form not in ("fused", "gated"):
                    xs = ops.moe_gather(x, row_token)
                if form == "gated":
                    a = ops.grouped_gemm_silu_and_mul(xs, gu_gated.packed, gu_gated.absmax, gu_gated.row_scale,
                                                      gu_gated.codebook, off, gu_gated.k)
                else:
                    h = kbit.grouped_gemm(xs, gu, off)
                    a = r["a"] if form in ("no_silu", "grouped_only") else ops.silu_and_mul(h)
                y = kbit.grouped_gemm(a, dn, off)
                if form in ("no_combine", "grouped_only"):
                    return y
                return ops.moe_combine(y, r["w"], r["ids"], pair_row, E)

            for r in routes[:3]:
                want = step(r, "step")
                for form in ("fused", "gated"):
                    assert torch.equal(step(r, form), want), (form, E, T)
            times = {form: [] for form in FORMS}
            for rnd in range(args.rounds):
                order = FORMS if rnd % 2 == 0 else tuple(reversed(FORMS))
                for form in order:
                    times[form].append(timer.measure([lambda r=r, form=form: step(r, form) for r in routes],
                                                     Work(0, 0, f"experts {form} {E} {T}")).median_us)
            med = {form: statistics.median(v) for form, v in times.items()}
            rows.append(dict(E=E, tokens=T, topk=topk, H=H, I=I, rounds=times, medians=med))
            print(f"| {E} | {T} | " + " | ".join(f"{med[f]:.2f}" for f in FORMS) + " |", flush=True)
            print("  marginal (step - form): " + ", ".join(f"{f} {med['step'] - med[f]:.2f}" for f in FORMS[1:]),
                  flush=True)
        del ex, gu, dn
        torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "experts-links.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
