"""The grouped GEMV's schedule A/B (GPU machine): per-CTA vs per-warp schedule, static first chunks
and their L2 prefetch. Times grouped_gemv_gemm (each decode of --decodes) on the Qwen3 MoE expert
shapes over E experts x tokens per expert under each setting F:P[:S[:W[:X[:R[:U]]]]] (F: the schedule form of
kbit._C._set_gemv_grouped_schedule, 0 per CTA, 1 per warp, 2 per warp with static first chunks
where T >= E; P = 1: the PDL prefetch rule, 0: none, kbit._C._set_pdl_prefetch_bytes; S: the most
unit slots per CTA, kbit._C._set_gemv_max_unit_slots, 8 = the rule when left out; W: the warps per
unit, kbit._C._set_gemv_unit_warps, 0 = the rule when left out; X: x shared by a CTA's warps,
kbit._C._set_gemv_grouped_x_shared, 1 = where it applies (the default) when left out, 0 never; R: the ring stages
of x-resident and x-shared launches, kbit._C._set_gemv_resident_stages, 0 = the launcher's when left out; U: the units
an x-shared warp runs back to back a round, kbit._C._set_gemv_shared_x_run, 0 = the rule when left out), alternating
the settings `--reps` times and keeping the median of each (cold L2, CUDA-graph medians,
benchmarks/harness.py; each setting's launch plan, kbit._C._grouped_gemv_launch_plan, on a second line), next to one dense GEMV call over the same weight bytes (E * N rows, M =
tokens per expert) and fp16 torch.bmm. Writes <out>/grouped-schedule.json and prints a table.

    python3 scripts/probe_grouped_schedule.py --experts 8,16,32 --per-expert 1,4 --out DIR
"""
import argparse
import json
import os
import statistics

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import cold_copies


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="moe_gu,moe_dn")
    ap.add_argument("--experts", default="8,16,32")
    ap.add_argument("--per-expert", default="1,4")
    ap.add_argument("--settings", default="0:1,1:1,2:0,2:1")
    ap.add_argument("--decodes", default="auto")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    defaults = ["8", "0", "1", "0", "0"]  # S, W, X, R, U when left out
    settings = [tuple(int(p) for p in (v.split(":") + defaults[v.count(":") - 1:])[:7])
                for v in args.settings.split(",")]
    labels = args.settings.split(",")
    rows = []
    before = (kbit._C._set_gemv_grouped_schedule(2), kbit._C._set_pdl_prefetch_bytes(-1),
              kbit._C._set_gemv_max_unit_slots(8), kbit._C._set_gemv_unit_warps(0), kbit._C._set_gemv_grouped_x_shared(1),
              kbit._C._set_gemv_resident_stages(0), kbit._C._set_gemv_shared_x_run(0))
    print("| shape | E | tokens/expert | decode | " + " | ".join(labels) + " | dense same bytes | bmm fp16 |")
    try:
        for name in args.shapes.split(","):
            N, K = S.SHAPES[name].N, S.SHAPES[name].K
            for E in (int(v) for v in args.experts.split(",")):
                g = torch.Generator(device=dev).manual_seed(E * 7 + N)
                W = torch.randn(E, N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
                qw = kbit.quantize(W, k=args.k)
                dense = kbit.quantize(W.reshape(E * N, K), k=args.k)
                a = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
                d = (dense.packed, dense.absmax, dense.row_scale, dense.codebook)
                n = cold_copies(sum(v.numel() * v.element_size() for v in a), info["l2_bytes"])
                copies = [a] + [tuple(v.clone() for v in a) for _ in range(n - 1)]
                dcopies = [d] + [tuple(v.clone() for v in d) for _ in range(n - 1)]
                wcopies = [W] + [W.clone() for _ in range(cold_copies(W.numel() * 2, info["l2_bytes"]) - 1)]
                for per in (int(v) for v in args.per_expert.split(",")):
                    x = torch.randn(E * per, K, device=dev, dtype=torch.float16, generator=g)
                    off = torch.arange(0, E + 1, device=dev, dtype=torch.int32) * per
                    xb = x.view(E, per, K)
                    kbit._C._set_gemv_grouped_schedule(2)
                    kbit._C._set_pdl_prefetch_bytes(-1)
                    kbit._C._set_gemv_max_unit_slots(8)
                    kbit._C._set_gemv_unit_warps(0)
                    kbit._C._set_gemv_grouped_x_shared(1)
                    kbit._C._set_gemv_resident_stages(0)
                    kbit._C._set_gemv_shared_x_run(0)
                    dense_us = timer.measure([lambda c=c: torch.ops.kbit.gemv_gemm(x[:per], *c, args.k) for c in dcopies],
                                             Work(0, 0, f"{name} dense {E}")).median_us
                    bmm_us = timer.measure([lambda w=w: torch.bmm(xb, w.transpose(1, 2)) for w in wcopies],
                                           Work(0, 0, f"{name} bmm {E}x{per}")).median_us
                    for decode in args.decodes.split(","):
                        samples = {s: [] for s in labels}
                        plans = {}  # what each setting launches (kbit._C._grouped_gemv_launch_plan)
                        for _ in range(args.reps):
                            for s, (form, prefetch, slots, unit_warps, shared, stages, run) in zip(labels, settings):
                                kbit._C._set_gemv_grouped_schedule(form)
                                kbit._C._set_pdl_prefetch_bytes(-1 if prefetch else 0)
                                kbit._C._set_gemv_max_unit_slots(slots)
                                kbit._C._set_gemv_unit_warps(unit_warps)
                                kbit._C._set_gemv_grouped_x_shared(shared)
                                kbit._C._set_gemv_resident_stages(stages)
                                kbit._C._set_gemv_shared_x_run(run)
                                if s not in plans:
                                    plans[s] = kbit._C._grouped_gemv_launch_plan(E * per, E, N, K, args.k, decode)
                                samples[s].append(timer.measure(
                                    [lambda c=c: torch.ops.kbit.grouped_gemv_gemm(x, *c, off, args.k, decode) for c in copies],
                                    Work(0, 0, f"{name} {E}x{per} {decode} {s}")).median_us)
                        row = {"shape": name, "N": N, "K": K, "E": E, "per_expert": per, "decode": decode,
                               "us": {s: statistics.median(v) for s, v in samples.items()},
                               "dense_same_bytes_us": dense_us, "bmm_fp16_us": bmm_us, "plans": plans}
                        rows.append(row)
                        print(f"| {name} | {E} | {per} | {decode} | " + " | ".join(f"{row['us'][s]:.2f}" for s in labels) +
                              f" | {dense_us:.2f} | {bmm_us:.2f} |", flush=True)
                        head = "|  plans (warps / per unit / stages / x shared (run) / CTAs per SM / grid) | | | | "
                        print(head + " | ".join(
                            "{warps}/{warps_per_unit}/{ring_stages}/{xs}/{ctas_per_sm}/{grid}".format(
                                xs=f"X{plans[s]['x_shared_run']}" if plans[s]["x_shared"] else "-", **plans[s])
                            for s in labels) + " | | |", flush=True)
    finally:
        kbit._C._set_gemv_grouped_schedule(before[0])
        kbit._C._set_pdl_prefetch_bytes(before[1])
        kbit._C._set_gemv_max_unit_slots(before[2])
        kbit._C._set_gemv_unit_warps(before[3])
        kbit._C._set_gemv_grouped_x_shared(before[4])
        kbit._C._set_gemv_resident_stages(before[5])
        kbit._C._set_gemv_shared_x_run(before[6])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "grouped-schedule.json"), "w") as f:
        json.dump({**run_meta(info), "k": args.k, "settings": labels, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
