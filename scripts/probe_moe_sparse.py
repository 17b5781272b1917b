"""MoE decode as kbit.Experts calls it: one grouped call over ALL E experts of a layer, of which
only `active` have rows (top-k routing of a few tokens), against the same call over the active
experts' weights alone (compacted, as benchmarks.run's MoE sweep times it) and fp16 torch.bmm over
those experts. Cold: every call in a graph routes to a different set of experts (and the compacted
case rotates weight copies). CUDA-graph medians (benchmarks/harness.py). Without --hot-offsets each
call reads its own offsets tensor, which the weight stream has evicted from L2: a DRAM round trip
before the schedule that a model does not pay (its routing kernel has just written them), ~700
cycles in a per-CTA trace, small next to the per-CTA schedule's own build (docs/design.md "Session 21").

    python3 scripts/probe_moe_sparse.py --experts 128,512 --active 8 --rows 1 --out DIR
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


def _rule_only(rows):
    if rows != 0:
        raise SystemExit("this build has no kbit._C._set_gemv_grouped_chunk_rows: --chunk-rows 0 only")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="moe_gu,moe_dn")
    ap.add_argument("--experts", default="128,512")
    ap.add_argument("--active", default="8")
    ap.add_argument("--rows", default="1", help="rows per active expert")
    ap.add_argument("--calls", type=int, default=24, help="routings per graph (cold weights)")
    ap.add_argument("--forms", default="2", help="the grouped GEMV's schedule forms to time the all-E call with "
                    "(kbit._C._set_gemv_grouped_schedule: 0 per CTA, 2 the default)")
    ap.add_argument("--chunk-rows", default="0", help="rows per chunk to time the all-E call with "
                    "(kbit._C._set_gemv_grouped_chunk_rows: 0 the rule)")
    ap.add_argument("--adjacent", action="store_true", help="route each call to `active` adjacent experts (a "
                    "contiguous weight range) instead of a random set")
    ap.add_argument("--topk", type=int, default=0, help="instead of --active / --rows: --tokens tokens each routed "
                    "to this many distinct experts at random (rows per expert as a model's routing gives them)")
    ap.add_argument("--tokens", default="1,2,4,8", help="with --topk: tokens per call")
    ap.add_argument("--hot-offsets", action="store_true", help="copy each call's routing into one offsets tensor "
                    "right before the call, as the routing kernel before it would leave them (L2-hot); the copy's "
                    "own time, measured alone, is subtracted")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    rows_out = []
    settings = [(int(f), int(c)) for f in args.forms.split(",") for c in args.chunk_rows.split(",")]
    labels = [f"all-E form {f} rows {c}" for f, c in settings]
    print("| shape | E | active | rows/expert | " + " | ".join(labels) + " | compacted call (us) | bmm fp16 (us) | all-E path |")
    print("|---|---:|---:|---:|" + "---:|" * (len(settings) + 2) + "---|")
    for name in args.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        for E in (int(v) for v in args.experts.split(",")):
            g = torch.Generator(device=dev).manual_seed(E + N)
            W = torch.randn(E, N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
            qw = kbit.quantize(W, k=args.k)
            plan = ([(n, 0) for n in (int(v) for v in args.tokens.split(","))] if args.topk else
                    [(a, p) for a in (int(v) for v in args.active.split(",")) for p in (int(v) for v in args.rows.split(","))])
            for active, per in plan:
                M = active * (args.topk if args.topk else per)
                x = torch.randn(M, K, device=dev, dtype=torch.float16, generator=g)
                routings = []
                for _ in range(args.calls):
                    if args.topk:  # `active` tokens, each to topk distinct experts
                        gen = torch.Generator().manual_seed(len(routings) + 7)
                        picks = torch.cat([torch.randperm(E, generator=gen)[:args.topk] for _ in range(active)])
                        counts = torch.bincount(picks, minlength=E).to(torch.int32)
                        off = torch.zeros(E + 1, dtype=torch.int32)
                        off[1:] = torch.cumsum(counts, 0)
                        routings.append((off.to(dev), picks.unique().to(dev)))
                        continue
                    if args.adjacent:
                        start = (len(routings) * active) % (E - active + 1)
                        ids = torch.arange(start, start + active)
                    else:
                        ids = torch.randperm(E, generator=torch.Generator().manual_seed(len(routings) + 7))[:active]
                    counts = torch.zeros(E, dtype=torch.int32)
                    counts[ids] = per
                    off = torch.zeros(E + 1, dtype=torch.int32)
                    off[1:] = torch.cumsum(counts, 0)
                    routings.append((off.to(dev), ids.sort().values.to(dev)))
                path = kbit._C.grouped_gemm_dispatch(M, E, N, K, args.k)
                off_static = torch.empty_like(routings[0][0])
                copy_us = 0.0
                if args.hot_offsets:
                    copy_us = timer.measure([lambda o=o: off_static.copy_(o) for o, _ in routings],
                                            Work(0, 0, f"{name} offsets copy {E}")).median_us
                all_us = {}
                for (form, chunk), label in zip(settings, labels):
                    # (a build without the chunk-rows aid, e.g. an A/B base: the rule only)
                    set_rows = getattr(kbit._C, "_set_gemv_grouped_chunk_rows", None) or _rule_only
                    prev = (kbit._C._set_gemv_grouped_schedule(form), set_rows(chunk))
                    try:
                        if args.hot_offsets:
                            def call(o):
                                off_static.copy_(o)
                                return torch.ops.kbit.grouped_gemm(x, qw.packed, qw.absmax, qw.row_scale,
                                                                   qw.codebook, off_static, args.k)
                        else:
                            def call(o):
                                return torch.ops.kbit.grouped_gemm(x, qw.packed, qw.absmax, qw.row_scale,
                                                                   qw.codebook, o, args.k)
                        all_us[label] = timer.measure([lambda o=o: call(o) for o, _ in routings],
                                                      Work(0, 0, f"{name} all {E} {label}")).median_us - copy_us
                    finally:
                        kbit._C._set_gemv_grouped_schedule(prev[0])
                        set_rows(prev[1])
                if args.topk:  # (no compacted or bmm twin for uneven rows per expert)
                    row = dict(shape=name, N=N, K=K, E=E, tokens=active, topk=args.topk, all_experts_us=all_us,
                               hot_offsets=args.hot_offsets, offsets_copy_us=copy_us, path=str(path))
                    rows_out.append(row)
                    print(f"| {name} | {E} | {active} tokens | top-{args.topk} | " +
                          " | ".join(f"{all_us[lb]:.2f}" for lb in labels) + f" | - | - | {path} |", flush=True)
                    continue
                # compacted: the active experts' weights alone, rotated through cold copies
                sub = kbit.quantize(W[routings[0][1]], k=args.k)
                a = (sub.packed, sub.absmax, sub.row_scale, sub.codebook)
                n = cold_copies(sum(v.numel() * v.element_size() for v in a), info["l2_bytes"])
                copies = [a] + [tuple(v.clone() for v in a) for _ in range(n - 1)]
                off_c = torch.arange(0, active + 1, device=dev, dtype=torch.int32) * per
                comp_us = timer.measure(
                    [lambda c=c: torch.ops.kbit.grouped_gemm(x, *c, off_c, args.k) for c in copies],
                    Work(0, 0, f"{name} compacted {active}")).median_us
                Ws = W[routings[0][1]]
                wcopies = [Ws] + [Ws.clone() for _ in range(cold_copies(Ws.numel() * 2, info["l2_bytes"]) - 1)]
                xb = x.view(active, per, K)
                bmm_us = timer.measure([lambda w=w: torch.bmm(xb, w.transpose(1, 2)) for w in wcopies],
                                       Work(0, 0, f"{name} bmm {active}")).median_us
                row = dict(shape=name, N=N, K=K, E=E, active=active, rows_per_expert=per, all_experts_us=all_us,
                           hot_offsets=args.hot_offsets, offsets_copy_us=copy_us,
                           compacted_us=comp_us, bmm_fp16_us=bmm_us, path=str(path))
                rows_out.append(row)
                print(f"| {name} | {E} | {active} | {per} | " + " | ".join(f"{all_us[lb]:.2f}" for lb in labels) +
                      f" | {comp_us:.2f} | {bmm_us:.2f} | {path} |", flush=True)
                del copies, wcopies, sub
            del W, qw
            torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "moe-sparse.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "rows": rows_out}, f, indent=1)


if __name__ == "__main__":
    main()
