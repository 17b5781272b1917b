"""A/B of the dense kernel ops themselves on this GPU (no dispatch): for each weight shape, k and M,
times each named op (torch.ops.kbit.<op>, e.g. tile_gemm vs wgmma_gemm) and cuBLAS fp16 on the
unquantized weight; fp16 activations, cold L2, CUDA-graph medians (benchmarks/harness.py).
Writes ``<out>/ab-<slug>.json`` and ``<out>/ab-<slug>.md`` (us, and fp16 / op).

    python -m benchmarks.ab_paths --ops tile_gemm,wgmma_gemm --shapes llama70b_gu --ms 16,64 --out $OUT
    python -m benchmarks.ab_paths --ops gemv_gemm:mma,gemv_gemm:shuffle --shapes Q,KV --ms 1,4 --out $OUT
"""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F

from . import shapes as S
from .harness import Work
from .session import run_meta, tuning_parser, tuning_run, tuning_setup
from .weights import rotated_copies


def cublas_label(dtype: torch.dtype) -> str:
    """sweep's label of cuBLAS on the unquantized weight in the activations' dtype: "fp16" or "bf16"."""
    return {torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]


def timing_words(run: Dict) -> str:
    """How a run's cells were timed, for its Markdown: the settled CUDA-graph medians, the sustained regime
    (sustain_s), or, for a merged run of both, which the commit note tells apart."""
    if "sustain_s" in run and run["sustain_s"] is None:
        return "CUDA-graph medians, settled or sustained by run (the commit's notes name the sustained ones)"
    if run.get("sustain_s"):
        return f"CUDA-graph medians of the second half of {run['sustain_s']:g} s of back-to-back replays (sustained)"
    return "CUDA-graph medians"


def cublas_path(run: Dict) -> str:
    """A sweep run's label of cuBLAS on the unquantized weight ("fp16"; "bf16" in a bf16 run)."""
    return "bf16" if run.get("dtype") == "bfloat16" else "fp16"


def sweep(paths: List[Tuple], shape_names: List[str], ms: List[int], ks: List[int],
          runs: Callable[[str, int, int, int], bool] = lambda path, k, M, K: True,
          cool_s: float = 1.0, dtype: torch.dtype = torch.float16, sustain_s: float = 0.0) -> Dict:
    """Time each (label, torch.ops.kbit op[, extra trailing arguments]) of `paths` (where
    runs(label, k, M, K)) and cuBLAS on the unquantized weight (label cublas_label(dtype), k None) for every
    shape, k and M (per shape: M descending, cuBLAS then each k's ops at each M): activations and that weight in
    dtype (fp16 or bf16), cold L2 (rotated weight copies), CUDA-graph medians. Rows:
    shape, N, K, M, k, path, us, spread, sm_mhz, settle_ms (harness.Timing). cool_s: TimerConfig's (after a
    timing over 4x heavier per call, idle that long first; 1 s: a sparse M grid such as 1024 then 1); sustain_s > 0:
    every timing in the sustained regime (TimerConfig.sustain_s; no cool idle), recorded as the run's sustain_s."""
    import kbit
    dev, info, timer = tuning_setup(0.0 if sustain_s > 0 else cool_s, sustain_s)
    rows = []

    def timed(label, fns, row):
        t = timer.measure(fns, Work(0, 0, label))
        rows.append({**row, "us": t.median_us, "spread": t.spread, "sm_mhz": t.sm_mhz, "settle_ms": t.settle_ms})
        return t

    for name in shape_names:
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        g = torch.Generator(device=dev).manual_seed(N * 131 + K)
        W = (torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5).to(dtype)
        dense_copies = rotated_copies(W, info["l2_bytes"])
        xs = {M: torch.randn(M, K, device=dev, dtype=torch.float16, generator=g).to(dtype) for M in ms}
        quantized = {}
        for k in ks:
            qw = kbit.quantize(W, k=k)
            quantized[k] = rotated_copies((qw.packed, qw.absmax, qw.row_scale, qw.codebook), info["l2_bytes"])
        # The largest M first, and cuBLAS next to the ops at each M: a light cell right after a heavy one ran
        # at the clocks the power cap left (session 26: H200 decode cells after cuBLAS at M = 1024 read 15-35%
        # slow in a sweep), so each M's cells follow the next larger M's, not the largest's.
        for M in sorted(ms, reverse=True):
            timed(f"{cublas_label(dtype)} {name} {M}", [lambda w=w, x=xs[M]: F.linear(x, w) for w in dense_copies],
                  {"shape": name, "N": N, "K": K, "M": M, "k": None, "path": cublas_label(dtype)})
            for k in ks:
                line = []
                for label, op_name, *extra in paths:
                    if not runs(label, k, M, K):
                        continue
                    op = getattr(torch.ops.kbit, op_name)
                    try:
                        t = timed(f"{label} {name} {k} {M}",
                                  [lambda c=c, op=op, x=xs[M]: op(x, *c, k, *extra) for c in quantized[k]],
                                  {"shape": name, "N": N, "K": K, "M": M, "k": k, "path": label})
                    except RuntimeError as e:  # a tile kernel on a GPU without its shared memory
                        if "shared memory" not in str(e):
                            raise
                        continue
                    line.append(f"{label} {t.median_us:8.1f} us")
                print(f"{name:12s} k={k} M={M:4d} " + "  ".join(line), flush=True)
        del dense_copies, quantized, W
        torch.cuda.empty_cache()
    return {**run_meta(info), "ms": ms, "ks": ks, "dtype": str(dtype).replace("torch.", ""), "l2": "cold",
            "sustain_s": sustain_s, "rows": rows}


def op_paths(ops: List[str]) -> List[Tuple]:
    """sweep's paths for op specs: an op name, optionally with one string argument passed after the
    op's k ("gemv_gemm:mma" times gemv_gemm(..., k, "mma")); each labelled by its spec."""
    return [(op, *op.split(":", 1)) for op in ops]


def measure(ops: List[str], shape_names: List[str], ms: List[int], ks: List[int],
            dtype: torch.dtype = torch.float16, sustain_s: float = 0.0) -> Dict:
    return {**sweep(op_paths(ops), shape_names, ms, ks, dtype=dtype, sustain_s=sustain_s), "ops": ops}


def write_markdown(run: Dict, path: str) -> None:
    dev = run["device"]
    t = {(r["shape"], r["M"], r["k"], r.get("path", r.get("op"))): r["us"] for r in run["rows"]}  # "op": older runs
    dense = cublas_path(run)
    lines = [f"# Kernel A/B: {dev['name']}", "",
             f"{run['date']}, commit {run['commit']}, torch {run['torch']}; {dense} activations, cold L2, "
             f"{timing_words(run)} (us), and cuBLAS {dense} time / op time in parentheses. Produced by "
             f"`python -m benchmarks.ab_paths --ops {','.join(run['ops'])}`.", ""]
    for name in dict.fromkeys(r["shape"] for r in run["rows"]):
        r0 = next(r for r in run["rows"] if r["shape"] == name)
        lines += [f"## {name} (N={r0['N']}, K={r0['K']})", "",
                  f"| k | M | {dense} | " + " | ".join(run["ops"]) + " |", "|---:|---:|---:|" + "---:|" * len(run["ops"])]
        for k in run["ks"]:
            for M in run["ms"]:
                fp = t[(name, M, None, dense)]
                cells = [f"{t[(name, M, k, op)]:.1f} ({fp / t[(name, M, k, op)]:.2f}x)" for op in run["ops"]]
                lines.append(f"| {k} | {M} | {fp:.1f} | " + " | ".join(cells) + " |")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main(argv=None) -> None:
    ap = tuning_parser(__doc__)
    ap.add_argument("--ops", default="tile_gemm,wgmma_gemm")
    ap.add_argument("--shapes", default="llama70b_gu,llama8b_gu,gateup")
    ap.add_argument("--ms", default="16,32,64,128")
    ap.add_argument("--ks", default="4")
    ap.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"),
                    help="the activations' (and cuBLAS's weight's) dtype")
    ap.add_argument("--sustain", type=float, default=0.0,
                    help="seconds: time every cell in the sustained regime (harness.TimerConfig.sustain_s)")
    args = ap.parse_args(argv)
    run = tuning_run(args, "ab", lambda: measure(args.ops.split(","), args.shapes.split(","),
                                                 [int(v) for v in args.ms.split(",")],
                                                 [int(v) for v in args.ks.split(",")], getattr(torch, args.dtype),
                                                 args.sustain))
    write_markdown(run, os.path.join(args.out, f"ab-{run['device']['slug']}.md"))


if __name__ == "__main__":
    main()
