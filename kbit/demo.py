"""`python -m kbit demo`: quantize a Qwen3-style transformer block and use it.

Builds random weights with the shapes of one Qwen3-Coder-Next block (hidden 2048: Q, K, V,
O, dense gate/up and down, and 8 routed experts), quantizes them at k = 2..5, reports the
SQNR of each and times one decode step's matmuls with kbit against the dense matmul, on
the GPU when there is one, else on the CPU.
"""
from __future__ import annotations

import argparse
import time

import torch

import kbit

# (name, N, K): weights are [N, K] like nn.Linear; experts are stacked [E, N, K].
DENSE = [("q_proj", 4096, 2048), ("k_proj", 512, 2048), ("v_proj", 512, 2048), ("o_proj", 2048, 4096),
         ("gate_up", 5120, 2048), ("down", 2048, 5120)]
EXPERTS = [("experts_gate_up", 512, 2048), ("experts_down", 2048, 512)]


def sqnr_db(w: torch.Tensor, w_hat: torch.Tensor) -> float:
    w, w_hat = w.double(), w_hat.double()
    return 10.0 * torch.log10(w.pow(2).sum() / (w - w_hat).pow(2).sum()).item()


def bench(fn, device: torch.device, iters: int) -> float:
    """Median seconds per call."""
    fn()
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def run(device: torch.device, experts: int, tokens: int, ks, iters: int) -> None:
    gen = torch.Generator().manual_seed(0)
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    print(f"kbit demo on {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}: "
          f"one Qwen3-style block, {experts} routed experts, {tokens} token(s), activations {dtype}")
    weights = {name: (torch.randn(n, k, generator=gen) * 0.02).to(device, dtype) for name, n, k in DENSE}
    weights.update({name: (torch.randn(experts, n, k, generator=gen) * 0.02).to(device, dtype)
                    for name, n, k in EXPERTS})
    x = torch.randn(tokens, 2048, generator=gen).to(device, dtype)
    xi = torch.randn(tokens, 4096, generator=gen).to(device, dtype)
    xd = torch.randn(tokens, 5120, generator=gen).to(device, dtype)
    xe = torch.randn(tokens * experts, 2048, generator=gen).to(device, dtype)
    xe2 = torch.randn(tokens * experts, 512, generator=gen).to(device, dtype)
    offsets = torch.arange(0, experts + 1, dtype=torch.int32, device=device) * tokens
    inputs = {"q_proj": x, "k_proj": x, "v_proj": x, "o_proj": xi, "gate_up": x, "down": xd}

    def dense_step():
        for name, w in weights.items():
            if w.dim() == 3:
                xin = xe if name == "experts_gate_up" else xe2
                torch.bmm(xin.view(experts, tokens, -1), w.transpose(1, 2))
            else:
                inputs[name] @ w.t()

    t_dense = bench(dense_step, device, iters)
    fp_bytes = sum(w.numel() * w.element_size() for w in weights.values())
    print(f"dense {dtype}: {fp_bytes / 2**20:.1f} MiB of weights, decode-step matmuls {t_dense * 1e3:.3f} ms")
    print(f"{'k':>2} {'MiB':>8} {'bits/w':>7} {'SQNR dB (min..max)':>20} {'matmul ms':>10} {'vs dense':>9}")
    for k in ks:
        qws = {name: kbit.quantize(w, k=k) for name, w in weights.items()}
        sq = [sqnr_db(w.float(), kbit.dequantize(qws[name], torch.float32)) for name, w in weights.items()]

        def kbit_step():
            for name, qw in qws.items():
                if qw.num_experts:
                    kbit.grouped_gemm(xe if name == "experts_gate_up" else xe2, qw, offsets)
                else:
                    kbit.gemm(inputs[name], qw)

        t = bench(kbit_step, device, iters)
        nbytes = sum(q.nbytes for q in qws.values())
        bits = 8 * nbytes / sum(w.numel() for w in weights.values())
        print(f"{k:>2} {nbytes / 2**20:>8.1f} {bits:>7.3f} {min(sq):>9.2f}..{max(sq):<9.2f} "
              f"{t * 1e3:>10.3f} {t_dense / t:>8.2f}x")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m kbit demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--tokens", type=int, default=1, help="tokens per step (per expert for experts)")
    p.add_argument("--k", type=int, nargs="+", default=[2, 3, 4, 5])
    p.add_argument("--iters", type=int, default=None)
    a = p.parse_args(argv)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    iters = a.iters or (50 if device.type == "cuda" else 3)
    run(device, a.experts, a.tokens, a.k, iters)
