"""Seeded fuzz test: random shapes, k, dtypes, codebooks and expert distributions through the
whole pipeline (quantize -> repack -> gemm / grouped_gemm), compared with the float64 reference.

A fixed-seed subset runs in the normal suite (CPU: small shapes; CUDA: N up to 20000,
K up to 16384, M up to 1024). A longer soak runs on demand:

    KBIT_FUZZ_CASES=2000 KBIT_FUZZ_SEED=7 python -m pytest tests/test_fuzz.py -k cuda -q

Each case draws its own generator from (seed, case index), so a failure message names
the one case to rerun.
"""
import os

import pytest
import torch

import kbit
import reference as R
from conftest import GEMM_RTOL, seed_for

SEED = int(os.environ.get("KBIT_FUZZ_SEED", "1"))
CASES = int(os.environ.get("KBIT_FUZZ_CASES", "0"))  # 0: the default counts below


def draw_case(device: str, index: int):
    g = torch.Generator().manual_seed(seed_for(f"fuzz-{SEED}-{device}-{index}"))
    ri = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=g))  # noqa: E731
    big = device == "cuda"
    k = ri(2, 5)
    dtype = (torch.float16, torch.bfloat16)[ri(0, 1)]
    grouped = ri(0, 3) == 0
    if grouped:
        E = (1, 2, 8, 64, 512)[ri(0, 4 if big else 2)]
        N = ri(1, 600 if big else 80)
        K = 32 * ri(1, 64 if big else 8)
        T = ri(0, 300 if big else 24)
        counts = torch.multinomial(torch.rand(E, generator=g) ** 4 + 1e-3, T, replacement=True,
                                   generator=g).bincount(minlength=E) if T else torch.zeros(E, dtype=torch.long)
        shape, M = (E, N, K), T
    else:
        N = ri(1, 20000 if big else 300) if ri(0, 3) else ri(1, 40)
        K = 32 * ri(1, 512 if big else 16)
        if big and N * K > 40_000_000:  # keep one case under ~1 s
            N = max(1, 40_000_000 // K)
        M = (ri(0, 4), ri(1, 70), ri(65, 1024 if big else 130))[ri(0, 2)]
        shape, counts = (N, K), None
    cb = None
    if ri(0, 3) == 0:  # a user codebook: sorted, distinct, not symmetric
        cb = torch.sort(torch.randn(2 ** k, generator=g, dtype=torch.float64)).values
        cb = (cb / cb.abs().max()).float()
        if torch.unique(cb).numel() != cb.numel():
            cb = None
    # weight scale 1e-3 .. 10: outputs stay well inside fp16's range (|y| < 65504)
    W = torch.randn(shape, generator=g) * (10.0 ** ri(-3, 1))
    x = torch.randn(M, shape[-1], generator=g).to(dtype)
    return dict(k=k, dtype=dtype, W=W, x=x, cb=cb, counts=counts)


def run_case(device: str, index: int):
    c = draw_case(device, index)
    qw = kbit.quantize(c["W"].to(device), k=c["k"], codebook=None if c["cb"] is None else c["cb"].to(device))
    flat = qw.to_layout("flat").cpu()
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double()
    x = c["x"].to(device)
    if c["counts"] is None:
        y = kbit.gemm(x, qw)
        ref = c["x"].double() @ W_hat.T
    else:
        off = torch.tensor([0] + c["counts"].cumsum(0).tolist(), dtype=torch.int32)
        y = kbit.grouped_gemm(x, qw, off.to(device))
        ref = torch.zeros(x.shape[0], W_hat.shape[1], dtype=torch.float64)
        o = off.tolist()
        for e in range(len(o) - 1):
            ref[o[e]:o[e + 1]] = c["x"][o[e]:o[e + 1]].double() @ W_hat[e].T
    y = y.cpu()
    what = f"fuzz case {index} (seed {SEED}, {device}): k={c['k']} {c['dtype']} W{tuple(c['W'].shape)} " \
           f"x{tuple(x.shape)} user_codebook={c['cb'] is not None}"
    assert y.shape == ref.shape and y.dtype == c["dtype"], what
    assert bool(torch.isfinite(y).all()), what
    if ref.numel():
        err = float((y.double() - ref).norm() / ref.norm().clamp_min(1e-300))
        assert err <= GEMM_RTOL[c["dtype"]], f"{what}: relative error {err:.2e}"


@pytest.mark.parametrize("index", range(CASES or 24))
def test_fuzz_cpu(index):
    run_case("cpu", index)


@pytest.mark.gpu
@pytest.mark.parametrize("index", range(CASES or 150))
def test_fuzz_cuda(index, poisoned_cuda):
    run_case("cuda", index)
