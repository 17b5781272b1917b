"""Where the fixed cost of a small gemm goes (GPU machine): CUDA-graph medians, the sweep's timer,
of a trivial kernel (the per-call floor of back-to-back graph kernels), cuBLAS fp16 and the small-M
kernel on tiny and Qwen3-size weights, hot (one weight copy) and cold (rotated copies).

    python3 scripts/probe_floor.py
"""
import torch

import kbit
from benchmarks.harness import Work
from benchmarks.session import tuning_setup
from benchmarks.weights import cold_copies


def main():
    dev, info, timer = tuning_setup()
    t = lambda fns, label: timer.measure(fns, Work(0, 0, label)).median_us
    n_cold = lambda nb: min(cold_copies(nb, info["l2_bytes"]), 1024)  # tiny weights: not cold, just many
    small = torch.zeros(64, device=dev)
    print(f"trivial add (64 floats): {t([lambda: small.add(1.0)], 'add'):.2f} us")
    for (N, K) in [(16, 256), (512, 2048), (5120, 2048), (14336, 4096)]:
        W = torch.randn(N, K, device=dev, dtype=torch.float16) * K ** -0.5
        x = torch.randn(1, K, device=dev, dtype=torch.float16)
        cold = [W] + [W.clone() for _ in range(n_cold(W.numel() * 2) - 1)]
        f16 = [t([lambda: torch.nn.functional.linear(x, W)], "f16 hot"),
               t([lambda w=w: torch.nn.functional.linear(x, w) for w in cold], "f16 cold")]
        del cold
        line = f"N={N:6d} K={K:5d} M=1  fp16 hot {f16[0]:6.2f} cold {f16[1]:6.2f}"
        for k in (2, 4):
            qw = kbit.quantize(W, k=k)
            a = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
            nb = sum(v.numel() * v.element_size() for v in a)
            copies = [a] + [tuple(v.clone() for v in a) for _ in range(n_cold(nb) - 1)]
            hot = t([lambda: torch.ops.kbit.mma_gemm(x, *a, k)], "hot")
            cold_t = t([lambda c=c: torch.ops.kbit.mma_gemm(x, *c, k) for c in copies], "cold")
            line += f" | k={k} mma hot {hot:6.2f} cold {cold_t:6.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
