"""Grouped (MoE) gemm: the grouped scalar GEMV vs the small-M grouped kernel vs the grouped tile
kernel vs fp16 bmm.

For MoE expert shapes, E experts and a uniform number of tokens per expert, times
torch.ops.kbit.grouped_gemv_gemm (up to 16 tokens per expert), torch.ops.kbit.grouped_mma_gemm
and torch.ops.kbit.grouped_tile_gemm (fp16 activations, cold
L2, CUDA-graph medians; benchmarks/harness.py), and torch.bmm on the unquantized fp16 experts as
the yardstick. The result picks the tokens-per-expert threshold at which grouped_gemm switches
kernels (csrc/cuda/gemm/gemm_cuda.cpp). Writes <out>/grouped-<slug>.json and .md.

    python -m benchmarks.tune_grouped --out $OUT          # on the GPU, ~2 min
    python -m benchmarks.tune_grouped --from-json F --out DIR
"""
from __future__ import annotations

import os
from typing import Dict, List

import torch

from . import shapes as S
from .harness import Work
from .session import run_meta, tuning_parser, tuning_run, tuning_setup
from .weights import rotated_copies

SHAPES = ["moe_gu", "moe_dn", "glm_moe_gu", "glm_moe_dn"]
EXPERTS = [8, 64, 512]
PER_EXPERT = [1, 2, 4, 8, 16, 32, 64]
PATHS = [("gemv", "grouped_gemv_gemm"), ("small", "grouped_mma_gemm"), ("tile", "grouped_tile_gemm")]
GEMV_MAX_PER_EXPERT = 16  # the grouped GEMV's largest chunk (mma decode): more tokens per expert re-read the weights


def measure(shape_names: List[str], experts: List[int], per_expert: List[int], k: int) -> Dict:
    import kbit
    dev, info, timer = tuning_setup()
    rows = []
    for name in shape_names:
        shape = S.SHAPES[name]
        N, K = shape.N, shape.K
        for E in experts:
            g = torch.Generator(device=dev).manual_seed(E * 7919 + N * 131 + K)
            W = torch.randn(E, N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
            Wt = rotated_copies(W.transpose(1, 2).contiguous(), info["l2_bytes"])
            qw = kbit.quantize(W, k=k)
            del W
            copies = rotated_copies((qw.packed, qw.absmax, qw.row_scale, qw.codebook), info["l2_bytes"])
            for tpe in per_expert:
                x = torch.randn(E * tpe, K, device=dev, dtype=torch.float16, generator=g)
                off = torch.arange(0, E + 1, device=dev, dtype=torch.int32) * tpe
                xb = x.view(E, tpe, K)
                us = {}
                t = timer.measure([lambda w=w: torch.bmm(xb, w) for w in Wt], Work(0, 0, f"bmm {name} {E} {tpe}"))
                us["fp16_bmm"] = t.median_us
                for path, op_name in PATHS:
                    if path == "gemv" and tpe > GEMV_MAX_PER_EXPERT:
                        continue
                    op = getattr(torch.ops.kbit, op_name)
                    t = timer.measure([lambda c=c, op=op: op(x, *c, off, k) for c in copies],
                                      Work(0, 0, f"{path} {name} {E} {tpe}"))
                    us[path] = t.median_us
                for path, v in us.items():
                    rows.append({"shape": name, "N": N, "K": K, "E": E, "per_expert": tpe, "k": k, "path": path, "us": v})
                print(f"{name:10s} E={E:4d} x {tpe:3d} " + "  ".join(f"{p} {v:8.1f} us" for p, v in us.items()), flush=True)
            del copies, qw, Wt
            torch.cuda.empty_cache()
    return {**run_meta(info), "k": k, "dtype": "float16", "l2": "cold", "rows": rows}


def write_markdown(run: Dict, path: str) -> None:
    t = {(r["shape"], r["E"], r["per_expert"], r["path"]): r["us"] for r in run["rows"]}
    keys = list(dict.fromkeys((r["shape"], r["N"], r["K"]) for r in run["rows"]))
    lines = [f"# Grouped gemm: scalar GEMV vs small-M vs tile kernel, {run['device']['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}; k = {run['k']}, fp16, cold L2, "
             "CUDA-graph medians (us); uniform tokens per expert. `gemv` = torch.ops.kbit.grouped_gemv_gemm "
             f"(timed up to {GEMV_MAX_PER_EXPERT} tokens per expert), `small` = torch.ops.kbit.grouped_mma_gemm, "
             "`tile` = torch.ops.kbit.grouped_tile_gemm, `bmm` = torch.bmm on the fp16 experts. "
             "Produced by `python -m benchmarks.tune_grouped`.", ""]
    for name, N, K in keys:
        es = sorted({r["E"] for r in run["rows"] if r["shape"] == name})
        tpes = sorted({r["per_expert"] for r in run["rows"] if r["shape"] == name})
        lines += [f"## {name} (per expert N={N}, K={K})", "",
                  "| E | tokens/expert | bmm fp16 | gemv | small | tile | best vs bmm |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for E in es:
            for tpe in tpes:
                b, a, c = (t[(name, E, tpe, p)] for p in ("fp16_bmm", "small", "tile"))
                v = t.get((name, E, tpe, "gemv"))
                best = min(x for x in (a, c, v) if x is not None)
                lines.append(f"| {E} | {tpe} | {b:.1f} | {'-' if v is None else f'{v:.1f}'} | {a:.1f} | {c:.1f} | "
                             f"{b / best:.2f}x |")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main(argv=None) -> None:
    ap = tuning_parser(__doc__)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--experts", default=",".join(map(str, EXPERTS)))
    ap.add_argument("--per-expert", default=",".join(map(str, PER_EXPERT)))
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args(argv)
    run = tuning_run(args, "grouped", lambda: measure(args.shapes.split(","), [int(v) for v in args.experts.split(",")],
                                                      [int(v) for v in args.per_expert.split(",")], args.k))
    write_markdown(run, os.path.join(args.out, f"grouped-{run['device']['slug']}.md"))


if __name__ == "__main__":
    main()
