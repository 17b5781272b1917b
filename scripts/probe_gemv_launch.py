"""The dense GEMV's launch settings A/B (GPU machine): token slots and the grid's spread.
Session 13's first A/B timed M = 8 (8 token slots) below M = 1 and 4 on several Qwen3 shapes; the
8-slot kernel's bigger CTAs fit fewer per SM. This times gemv_gemm(..., 'mma') at each M under each setting
SLOTS:SPREAD[:XRES[:STAGES[:USLOTS[:UWARPS[:SPLIT[:PDL[:LAYOUT[:LSTAGES[:DPATH]]]]]]]]] (the slot floor,
kbit._C._set_gemv_min_token_slots, the shared-memory padding that spreads a small grid over the SMs,
kbit._C._set_gemv_spread, 1 = on, x resident, kbit._C._set_gemv_x_resident: 0 never, 1 the rule (default), 2
where it fits, and its ring stages, kbit._C._set_gemv_resident_stages: 0 the rule (default), 2-4, and the most
unit slots per CTA, kbit._C._set_gemv_max_unit_slots: 8 the rule (default), 1 one unit at a time, and the
warps per unit, kbit._C._set_gemv_unit_warps: 0 the rule (default), else that many, and the cluster split,
kbit._C._set_gemv_split_cluster: -1 the rule (default), 0 never, 2 / 4 / 8 that size, and programmatic
dependent launch, kbit._C.set_dependent_launch: 1 on (default), 0 off, and the wide pair table,
kbit._C._set_gemv_staged_layout: -1 the rule (default), 0 one unit per CTA, 1 unit slots, 2 unit slots with
the wide pair table, and the unit slots' ring stages, kbit._C._set_gemv_staged_stages: 0 the rule (default),
2-4, and the decode rule at 1-4 rows, kbit._C._set_gemv_decode_path_rule: 1 session 66's (default), 0 session
37's), alternating the settings `--reps` times and keeping the median of each (cold L2, CUDA-graph medians,
benchmarks/harness.py). Writes <out>/gemv-launch.json and prints a table.

    python3 scripts/probe_gemv_launch.py --shapes KV,Q,gateup --ms 1,4 --settings 1:0,8:0,1:1 --out DIR

A shape is a name of benchmarks/shapes.py or N x K as "14336x4096".
"""
import argparse
import json
import os
import re
import statistics

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import cold_copies


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="KV,Q,O,gateup,down,llama8b_gu")
    ap.add_argument("--ms", default="1,4")
    ap.add_argument("--settings", default="1:0,8:0,1:1")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--baselines", default="",
                    help="also time these: fp16 (cuBLAS, F.linear), tile, wgmma, gemm (kbit's dispatch)")
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    # the settings' fields in order: (setter, default)
    aids = [(kbit._C._set_gemv_min_token_slots, 1), (lambda v: kbit._C._set_gemv_spread(bool(v)), 1),
            (kbit._C._set_gemv_x_resident, 1), (kbit._C._set_gemv_resident_stages, 0),
            (kbit._C._set_gemv_max_unit_slots, 8), (kbit._C._set_gemv_unit_warps, 0),
            (kbit._C._set_gemv_split_cluster, -1), (lambda v: kbit._C.set_dependent_launch(bool(v)), 1),
            (kbit._C._set_gemv_staged_layout, -1), (kbit._C._set_gemv_staged_stages, 0),
            (kbit._C._set_gemv_decode_path_rule, 1)]
    settings = []
    for v in args.settings.split(","):
        given = [int(p) for p in v.split(":")]
        settings.append(tuple(given + [d for _, d in aids[len(given):]]))
    labels = [":".join(map(str, st)) for st in settings]
    rows = []
    before = [setter(default) for setter, default in aids]
    try:
        for name in args.shapes.split(","):
            m = re.fullmatch(r"(\d+)x(\d+)", name)  # N x K, for sizes that are no model's
            N, K = (int(m[1]), int(m[2])) if m else (S.SHAPES[name].N, S.SHAPES[name].K)
            g = torch.Generator(device=dev).manual_seed(N * 131 + K)
            qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5, k=args.k)
            a = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nb = sum(v.numel() * v.element_size() for v in a)
            copies = [a] + [tuple(v.clone() for v in a) for _ in range(cold_copies(nb, info["l2_bytes"]) - 1)]
            bases = [b for b in args.baselines.split(",") if b]
            if "fp16" in bases:
                w16 = torch.randn(N, K, device=dev, dtype=torch.float16, generator=g)
                w16s = [w16] + [w16.clone() for _ in range(cold_copies(w16.numel() * 2, info["l2_bytes"]) - 1)]
            for M in (int(v) for v in args.ms.split(",")):
                x = torch.randn(M, K, device=dev, dtype=torch.float16, generator=g)
                samples = {s: [] for s in labels}
                plans = {}
                for _ in range(args.reps):
                    for s, setting in zip(labels, settings):
                        for (setter, _), value in zip(aids, setting):
                            setter(value)
                        plans[s] = kbit._C._gemv_launch_plan(M, N, K, args.k, "mma")
                        samples[s].append(timer.measure(
                            [lambda c=c: torch.ops.kbit.gemv_gemm(x, *c, args.k, "mma") for c in copies],
                            Work(0, 0, f"{name} {M} {s}")).median_us)
                for setter, default in aids:  # (the baselines under the default settings: gemm's GEMV plan, the rule's)
                    setter(default)
                for b in bases:
                    if b == "fp16":
                        fns = [lambda w=w: torch.nn.functional.linear(x, w) for w in w16s]
                    elif b == "gemm":
                        fns = [lambda c=c: torch.ops.kbit.gemm(x, *c, args.k) for c in copies]
                    else:
                        op = getattr(torch.ops.kbit, f"{b}_gemm")
                        fns = [lambda c=c, op=op: op(x, *c, args.k) for c in copies]
                    samples[b] = [timer.measure(fns, Work(0, 0, f"{name} {M} {b}")).median_us]
                plan = kbit._C._gemv_launch_plan(M, N, K, args.k, "mma")  # under the default settings
                row = {"shape": name, "N": N, "K": K, "M": M, "plan": dict(plan),
                       "dispatch": kbit._C.gemm_dispatch(M, N, K, args.k, 0, "float16")[0],
                       "plans": {s: dict(p) for s, p in plans.items()},
                       "us": {s: statistics.median(v) for s, v in samples.items()}}
                rows.append(row)
                print(f"| {name} | {M} | " + " | ".join(f"{row['us'][s]:.2f}" for s in labels + bases) +
                      f" | grid {plan['grid']} x {plan['warps']} warps, {plan['ctas_per_sm']} per SM, split "
                      f"{plan['split_cluster']}, layout {plan['staged_layout']}; gemm takes {row['dispatch']} |",
                      flush=True)
    finally:
        for (setter, _), value in zip(aids, before):
            setter(value)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gemv-launch.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "settings": labels, "baselines": args.baselines, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
