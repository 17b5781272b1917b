"""Session 11 experiment: the scalar GEMV's launch variants (environment switches read by its
launcher: KBIT_GEMV_DECODE, KBIT_GEMV_MAX_WARPS, KBIT_GEMV_MINB) on one quantized copy set per
shape: fp16 activations, cold L2, CUDA-graph medians (us). Prints one line per (shape, k, M) and
writes a JSON of all rows.

    python scripts/gemv_variants.py --variants shuffle:16:2,mma:8:3 --shapes Q,llama8b_gu --ks 4 --ms 1,4 --out out
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import shapes as S  # noqa: E402
from benchmarks.harness import Work  # noqa: E402
from benchmarks.session import run_meta, tuning_setup  # noqa: E402
from benchmarks.weights import cold_copies  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", required=True, help="decode:max_warps:min_blocks,...")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--ks", default="4")
    ap.add_argument("--ms", default="1")
    ap.add_argument("--out", default="out")
    a = ap.parse_args()
    import kbit  # noqa: F401
    dev, info, timer = tuning_setup()
    variants = [v.split(":") for v in a.variants.split(",")]
    ks, ms = [int(v) for v in a.ks.split(",")], [int(v) for v in a.ms.split(",")]
    rows = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        g = torch.Generator(device=dev).manual_seed(N * 131 + K)
        W = torch.randn(N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
        xs = {M: torch.randn(M, K, device=dev, dtype=torch.float16, generator=g) for M in ms}
        for k in ks:
            qw = kbit.quantize(W, k=k)
            args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nbytes = sum(t.numel() * t.element_size() for t in args)
            copies = [args] + [tuple(t.clone() for t in args) for _ in range(cold_copies(nbytes, info["l2_bytes"]) - 1)]
            for M in ms:
                line = []
                for decode, warps, minb in variants:
                    os.environ.update(KBIT_GEMV_DECODE=decode, KBIT_GEMV_MAX_WARPS=warps, KBIT_GEMV_MINB=minb)
                    op = torch.ops.kbit.gemv_gemm
                    t = timer.measure([lambda c=c, x=xs[M]: op(x, *c, k) for c in copies], Work(0, 0, f"{name} {k} {M}"))
                    label = f"{decode}:{warps}:{minb}"
                    rows.append({"shape": name, "N": N, "K": K, "k": k, "M": M, "variant": label, "us": t.median_us})
                    line.append(f"{label} {t.median_us:6.2f}")
                print(f"{name:12s} k={k} M={M} " + "  ".join(line), flush=True)
            del copies, qw
        del W
        torch.cuda.empty_cache()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "gemv-variants.json"), "w") as f:
        json.dump({**run_meta(info), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
