"""What programmatic dependent launch (PDL) buys kbit's kernels, after themselves and after an elementwise kernel.

The benchmark harness times back-to-back calls of one op, so with PDL each call's launch and
set-up overlap the previous call of the same kernel. In a model the kernel before a projection is
often something else (a norm, a rotary embedding), which does not let its successor start early.
Per shape and M this times, in CUDA graphs (cold L2, medians, benchmarks/harness.py):
  op:        the op alone, back to back;
  pre + op:  an elementwise kernel writing the op's x (torch.mul(x0, 1, out=x), a stand-in for
             the norm before a projection), then the op reading it;
  pre:       the elementwise kernel alone.
(pre + op) - pre is what the op costs after a kernel that does not trigger early. Each timing is
taken with PDL on and off (kbit._C.set_dependent_launch) in the same process, alternating, `--reps`
times (the median of each kept): machine drift between processes was as large as the effect.
With --prefetch, PDL on is timed with each size of the L2 prefetch of a CTA's first tile
(kbit._C._set_pdl_prefetch_bytes; -1: the kernels' rule, 0: none).

    python -m benchmarks.bench_pdl --out DIR [--shapes KV,Q,gateup,llama8b_gu] [--ms 1,4] [--op gemm]
                                   [--prefetch=-1,65536,0]
"""
from __future__ import annotations

import os
from typing import List, Tuple

import torch

from . import shapes as S
from .harness import Work
from .session import run_meta, tuning_parser, tuning_run, tuning_setup
from .weights import rotated_copies


def settings_for(prefetch: List[int]) -> List[Tuple[str, bool, int]]:
    """(label, PDL on, L2 prefetch bytes): PDL off, then PDL on with each prefetch size."""
    def label(p):
        return "PDL" if p < 0 else f"PDL, prefetch {p // 1024} KB" if p else "PDL, no prefetch"
    return [("no PDL", False, -1)] + [(label(p), True, p) for p in prefetch]


def measure(shape_names, ms, k: int = 4, op_name: str = "gemm", reps: int = 3, prefetch=(-1,)):
    import statistics

    import kbit
    dev, info, timer = tuning_setup()
    op = getattr(torch.ops.kbit, op_name)
    settings = settings_for(list(prefetch))
    rows = []
    before = kbit._C.set_dependent_launch(True)
    before_prefetch = kbit._C._set_pdl_prefetch_bytes(-1)
    try:
        for name in shape_names:
            N, K = S.SHAPES[name].N, S.SHAPES[name].K
            g = torch.Generator(device=dev).manual_seed(N * 131 + K)
            W = torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
            qw = kbit.quantize(W, k=k)
            copies = rotated_copies((qw.packed, qw.absmax, qw.row_scale, qw.codebook), info["l2_bytes"])
            for M in ms:
                x0 = torch.randn(M, K, device=dev, dtype=torch.float16, generator=g)
                x = x0.clone()
                samples = {(label, what): [] for label, _, _ in settings for what in ("op", "pair")}
                pre = []
                for _ in range(reps):
                    for label, pdl, cap in settings:
                        kbit._C.set_dependent_launch(pdl)
                        kbit._C._set_pdl_prefetch_bytes(cap)
                        samples[(label, "op")].append(timer.measure(
                            [lambda c=c: op(x, *c, k) for c in copies], Work(0, 0, f"op {name} {M}")).median_us)
                        samples[(label, "pair")].append(timer.measure(
                            [lambda c=c: op(torch.mul(x0, 1, out=x), *c, k) for c in copies],
                            Work(0, 0, f"pre+op {name} {M}")).median_us)
                    pre.append(timer.measure([lambda: torch.mul(x0, 1, out=x)], Work(0, 0, "pre")).median_us)
                t_pre = statistics.median(pre)
                row = {"shape": name, "N": N, "K": K, "M": M, "k": k, "pre_us": t_pre, "op_us": {}, "after_pre_us": {}}
                for label, _, _ in settings:
                    row["op_us"][label] = statistics.median(samples[(label, "op")])
                    row["after_pre_us"][label] = statistics.median(samples[(label, "pair")]) - t_pre
                rows.append(row)
                print(f"{name:12s} M={M} op " + " / ".join(f"{row['op_us'][s[0]]:6.2f}" for s in settings) +
                      "   after pre " + " / ".join(f"{row['after_pre_us'][s[0]]:6.2f}" for s in settings) +
                      f" us (pre {t_pre:.2f})", flush=True)
            del copies, qw, W
            torch.cuda.empty_cache()
    finally:
        kbit._C.set_dependent_launch(before)
        kbit._C._set_pdl_prefetch_bytes(before_prefetch)
    return {**run_meta(info), "op": op_name, "k": k, "reps": reps, "settings": [s[0] for s in settings], "rows": rows}


def write_markdown(run, path: str) -> None:
    settings = run["settings"]
    lines = [f"# PDL on / off: {run['device']['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}; torch.ops.kbit.{run['op']}, k = {run['k']}, "
             f"fp16, cold L2, CUDA-graph medians (us), median of {run['reps']} timings taken in turn. "
             "`python -m benchmarks.bench_pdl`. Back to back: the op after itself; after pre: (elementwise kernel "
             "+ op) - the elementwise kernel alone.", "",
             "| shape | M | " + " | ".join(f"back to back, {s}" for s in settings) + " | " +
             " | ".join(f"after pre, {s}" for s in settings) + " |",
             "|---|---:|" + "---:|" * (2 * len(settings))]
    for r in run["rows"]:
        lines.append(f"| {r['shape']} | {r['M']} | " + " | ".join(f"{r['op_us'][s]:.2f}" for s in settings) + " | " +
                     " | ".join(f"{r['after_pre_us'][s]:.2f}" for s in settings) + " |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None) -> None:
    ap = tuning_parser(__doc__)
    ap.add_argument("--shapes", default="KV,Q,gateup,llama8b_gu")
    ap.add_argument("--ms", default="1,4")
    ap.add_argument("--op", default="gemm")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--prefetch", default="-1",
                    help="L2 prefetch bytes to time with PDL on, comma-separated (-1: the kernels' rule, 0: none)")
    args = ap.parse_args(argv)
    run = tuning_run(args, "pdl", lambda: measure(args.shapes.split(","), [int(v) for v in args.ms.split(",")],
                                                  op_name=args.op, reps=args.reps,
                                                  prefetch=[int(v) for v in args.prefetch.split(",")]))
    write_markdown(run, os.path.join(args.out, f"pdl-{run['device']['slug']}.md"))


if __name__ == "__main__":
    main()
