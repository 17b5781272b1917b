"""Throughput of the format ops (quantize, repack, dequantize) on one large weight, against the GPU's copy bandwidth.
Issue 3's measurement: an 8192 x 28672 weight (N = 28672 rows, K = 8192), bytes = read + written, CUDA-graph
medians (benchmarks/harness.py). The weight (470 MB in fp16) is over 4x the L2, so every call is cold.
Writes ``<out>/format-<slug>.json`` and ``<out>/format-<slug>.md``.

    python -m benchmarks.bench_format --out $OUT [--ks 2,3,4,5] [--dtypes float16,bfloat16]
"""
from __future__ import annotations

import os
from typing import Dict, List

import torch

from . import harness
from .harness import Work
from .session import run_meta, tuning_parser, tuning_run, tuning_setup

N, K = 28672, 8192
GOALS = {"quantize": 0.50, "repack": 0.40, "dequantize": 0.75, "dequantize_tiled": 0.75}  # of copy bandwidth


def nbytes(*tensors: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def measure(ks: List[int], dtypes: List[str]) -> Dict:
    import kbit
    ops = torch.ops.kbit
    dev, info, timer = tuning_setup()
    copy = harness.copy_bandwidth(timer, dev, 1 << 30)
    print(f"{info['name']}: copy {copy['gbps']:.0f} GB/s (read + write)", flush=True)
    rows = []

    def record(op: str, k: int, dtype: str, fn, moved: int) -> None:
        t = timer.measure([fn], Work(moved, 0, f"{op} {k} {dtype}"))
        gbps = moved / (t.median_us * 1e-6) / 1e9
        rows.append({"op": op, "k": k, "dtype": dtype, "us": t.median_us, "spread": t.spread, "bytes": moved,
                     "gbps": gbps, "of_copy": gbps / copy["gbps"]})
        print(f"k={k} {op:17s} {dtype:9s} {t.median_us:8.1f} us {gbps:6.0f} GB/s {100 * gbps / copy['gbps']:5.1f}% of copy",
              flush=True)

    g = torch.Generator(device=dev).manual_seed(0)
    for k in ks:
        cb = kbit.codebook(k).to(dev)
        for name in dtypes:
            dtype = getattr(torch, name)
            W = torch.randn(N, K, device=dev, dtype=dtype, generator=g)
            p, a, r = ops.quantize(W, cb, k)
            record("quantize", k, name, lambda W=W: ops.quantize(W, cb, k), nbytes(W, p, a, r))
            del W
        tp, ta = ops.repack(p, a)
        record("repack", k, "-", lambda: ops.repack(p, a), nbytes(p, a, tp, ta))
        out = N * K * 2
        record("dequantize", k, "float16", lambda: ops.dequantize(p, a, r, cb, k, torch.float16), nbytes(p, a, r) + out)
        record("dequantize_tiled", k, "float16", lambda: ops.dequantize_tiled(tp, ta, r, cb, k, K, torch.float16),
               nbytes(tp, ta, r) + out)
        del p, a, r, tp, ta
        torch.cuda.empty_cache()
    return {**run_meta(info), "N": N, "K": K, "copy_gbps": copy["gbps"], "goals": GOALS, "rows": rows}


def write_markdown(run: Dict, path: str) -> None:
    lines = [f"# Format ops: {run['device']['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}. Weight N = {run['N']} x K = {run['K']}; "
             "bytes = read + written; CUDA-graph medians (cold: the weight is > 4x L2). Copy bandwidth in the same run: "
             f"{run['copy_gbps']:.0f} GB/s. Produced by `python -m benchmarks.bench_format`.", "",
             "| op | k | input / output | us | GB/s | % of copy | goal |", "|---|---:|---|---:|---:|---:|---:|"]
    for r in run["rows"]:
        goal = run["goals"].get(r["op"])
        mark = "" if goal is None else (f">= {100 * goal:.0f}% " + ("met" if r["of_copy"] >= goal else "**missed**"))
        lines.append(f"| {r['op']} | {r['k']} | {r['dtype']} | {r['us']:.1f} | {r['gbps']:.0f} | "
                     f"{100 * r['of_copy']:.1f} | {mark} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None) -> None:
    ap = tuning_parser(__doc__)
    ap.add_argument("--ks", default="2,3,4,5")
    ap.add_argument("--dtypes", default="float16,bfloat16", help="quantize input dtypes")
    args = ap.parse_args(argv)
    run = tuning_run(args, "format", lambda: measure([int(v) for v in args.ks.split(",")], args.dtypes.split(",")))
    write_markdown(run, os.path.join(args.out, f"format-{run['device']['slug']}.md"))


if __name__ == "__main__":
    main()
