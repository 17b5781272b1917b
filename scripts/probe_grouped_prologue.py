"""Where the grouped kernels' fixed cost goes at decode (docs/design.md, "Session 10"): the same
weight bytes timed as one dense GEMV call and as grouped calls over E experts of 1 token each,
and the grouped call with every expert empty (offsets all 0: the schedule and a NaN fill of the E unowned rows, no weight read). H100, k = 4, fp16,
cold L2 (rotated weight copies), CUDA-graph medians.

    python3 scripts/probe_grouped_prologue.py
"""
import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import cold_copies


def main():
    dev, info, timer = tuning_setup()
    k, N, K = 4, 512, 2048  # Qwen3 MoE gate/up per expert
    print(f"{info['name']}: k={k}, per expert N={N} K={K}; us (cold L2, graph medians)")
    for E in (1, 8, 64):
        g = torch.Generator(device=dev).manual_seed(E)
        W = torch.randn(E, N, K, device=dev, dtype=torch.float16, generator=g) * K ** -0.5
        qw = kbit.quantize(W, k=k)
        dense = kbit.quantize(W.reshape(E * N, K), k=k)
        args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
        dargs = (dense.packed, dense.absmax, dense.row_scale, dense.codebook)
        nbytes = sum(a.numel() * a.element_size() for a in args)
        n = cold_copies(nbytes, info["l2_bytes"])
        copies = [args] + [tuple(a.clone() for a in args) for _ in range(n - 1)]
        dcopies = [dargs] + [tuple(a.clone() for a in dargs) for _ in range(n - 1)]
        x = torch.randn(E, K, device=dev, dtype=torch.float16, generator=g)
        one = torch.arange(0, E + 1, device=dev, dtype=torch.int32)
        none = torch.zeros(E + 1, device=dev, dtype=torch.int32)
        row = {}
        row["dense gemv (E*N rows, M=1)"] = timer.measure(
            [lambda c=c: torch.ops.kbit.gemv_gemm(x[:1], *c, k) for c in dcopies], Work(0, 0, f"d{E}")).median_us
        for name, op in (("grouped gemv", torch.ops.kbit.grouped_gemv_gemm), ("grouped mma", torch.ops.kbit.grouped_mma_gemm)):
            row[f"{name}, {E} x 1"] = timer.measure(
                [lambda c=c, op=op: op(x, *c, one, k) for c in copies], Work(0, 0, f"{name}{E}")).median_us
            row[f"{name}, all empty"] = timer.measure(
                [lambda c=c, op=op: op(x, *c, none, k) for c in copies], Work(0, 0, f"{name}{E}e")).median_us
        print(f"E={E:3d}: " + "  ".join(f"{n} {v:.2f}" for n, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
