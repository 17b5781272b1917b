"""Where a kbit.Experts decode step's time goes (GPU machine): the whole forward (routing prep, two
grouped_gemm calls over all E experts, activation, weighted combine) against its two grouped calls
alone, on the same routings. Qwen3 MoE expert shapes (H = 2048, I = 512), top-k routing of a few
tokens to distinct experts at random, a different routing per call (the touched experts' weights
are cold: E x 3 MB of weights at k = 4 is far past L2). CUDA-graph medians (benchmarks/harness.py).

With --gather-ab R: also the forward as it was before kbit::moe_gather (x gathered by ATen's index_select, the
same ops otherwise), R rounds alternating with the forward. With --slot-ab R: the forward against its routed form
(Experts.SLOT_MAX_PAIRS = 0: moe_route_gather, the two grouped calls over all E experts, moe_combine) where the
forward takes the slot path (kbit::grouped_gemm_slots), R rounds alternating.

    python3 scripts/probe_experts_decode.py --experts 128,512 --tokens 1,4,16 --out DIR [--gather-ab 3] [--slot-ab 3]
"""
import argparse
import copy
import json
import os
import statistics

import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experts", default="128,512")
    ap.add_argument("--tokens", default="1,4,16")
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--calls", type=int, default=24, help="routings per graph")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    ap.add_argument("--gather-ab", type=int, default=0, help="rounds of forward against its index_select form")
    ap.add_argument("--slot-ab", type=int, default=0, help="rounds of forward against its routed form (slot path)")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    H, I, topk = args.hidden, args.intermediate, args.topk
    rows = []
    print("| E | tokens | top-k | Experts.forward (us) | two grouped_gemm calls (us) | the rest (us) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for E in (int(v) for v in args.experts.split(",")):
        g = torch.Generator(device=dev).manual_seed(E)
        gate_up = torch.randn(E, 2 * I, H, device=dev, dtype=torch.float16, generator=g) * H ** -0.5
        down = torch.randn(E, H, I, device=dev, dtype=torch.float16, generator=g) * I ** -0.5
        ex = kbit.Experts.from_weights(gate_up, down, k=args.k)
        del gate_up, down
        gu, dn = ex.gate_up_proj.quantized(), ex.down_proj.quantized()
        for T in (int(v) for v in args.tokens.split(",")):
            x = torch.randn(T, H, device=dev, dtype=torch.float16, generator=g)
            routes = []
            for c in range(args.calls):
                gen = torch.Generator().manual_seed(1000 * E + 10 * T + c)
                ids = torch.stack([torch.randperm(E, generator=gen)[:topk] for _ in range(T)]).to(dev)
                w = torch.rand(T, topk, generator=gen).softmax(-1).to(dev, torch.float16)
                # what forward hands the grouped calls: rows grouped by expert, the offsets
                flat = ids.reshape(-1)
                order = torch.sort(flat, stable=True).indices
                off = torch.searchsorted(flat[order], torch.arange(E + 1, device=dev), out_int32=True)
                xs = x.index_select(0, order // topk)
                a = torch.randn(T * topk, I, device=dev, dtype=torch.float16, generator=g)
                routes.append((ids, w, off, xs, a))
            fwd = timer.measure([lambda r=r: ex(x, r[0], r[1]) for r in routes],
                                Work(0, 0, f"experts forward {E} {T}")).median_us
            grouped = timer.measure([lambda r=r: (kbit.grouped_gemm(r[3], gu, r[2]), kbit.grouped_gemm(r[4], dn, r[2]))
                                     for r in routes], Work(0, 0, f"experts grouped {E} {T}")).median_us
            rows.append(dict(E=E, tokens=T, topk=topk, H=H, I=I, forward_us=fwd, grouped_us=grouped))
            print(f"| {E} | {T} | {topk} | {fwd:.2f} | {grouped:.2f} | {fwd - grouped:.2f} |", flush=True)
            ab = {"moe_gather": [], "index_select": []}
            for rnd in range(args.gather_ab):
                for form in (("moe_gather", "index_select") if rnd % 2 == 0 else ("index_select", "moe_gather")):
                    step = ex if form == "moe_gather" else (lambda *a: forward_index_select(ex, gu, *a))
                    ab[form].append(timer.measure([lambda r=r, step=step: step(x, r[0], r[1]) for r in routes],
                                                  Work(0, 0, f"experts {form} {E} {T}")).median_us)
            if args.gather_ab:
                rows[-1]["gather_ab"] = ab
                med = {form: statistics.median(times) for form, times in ab.items()}
                print(f"  gather A/B, medians of {args.gather_ab}: index_select {med['index_select']:.2f} moe_gather "
                      f"{med['moe_gather']:.2f} us", flush=True)
            rows[-1]["slot_path"] = ex.slot_path(T, topk, x.device)
            if args.slot_ab and rows[-1]["slot_path"]:
                routed = copy.copy(ex)
                routed.SLOT_MAX_PAIRS = 0
                sab = {"slots": [], "routed": []}
                for rnd in range(args.slot_ab):
                    for form in (("slots", "routed") if rnd % 2 == 0 else ("routed", "slots")):
                        step = ex if form == "slots" else routed
                        sab[form].append(timer.measure([lambda r=r, step=step: step(x, r[0], r[1]) for r in routes],
                                                       Work(0, 0, f"experts {form} {E} {T}")).median_us)
                rows[-1]["slot_ab"] = sab
                med = {form: statistics.median(times) for form, times in sab.items()}
                print(f"  slot A/B, medians of {args.slot_ab}: routed {med['routed']:.2f} slots {med['slots']:.2f} us "
                      f"({med['routed'] / med['slots']:.3f}x)", flush=True)
        del ex, gu, dn
        torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "experts-decode.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "rows": rows}, f, indent=1)


def forward_index_select(ex, gu, x, ids, w):
    """kbit.Experts.forward's ops as session 56 left them (these inputs need none of its casts): moe_route, x gathered
    by ATen's index_select, the gate/up call on gu (the natural order, taken outside the timed calls), silu_and_mul,
    the down call, moe_combine."""
    E = ex.num_experts
    offsets, row_token, pair_row = torch.ops.kbit.moe_route(ids, E)
    xs = x.index_select(0, row_token)
    h = kbit.grouped_gemm(xs, gu, offsets)
    y = kbit.grouped_gemm(torch.ops.kbit.silu_and_mul(h), ex.down_proj.quantized(), offsets)
    return torch.ops.kbit.moe_combine(y, w, ids, pair_row, E)


if __name__ == "__main__":
    main()
