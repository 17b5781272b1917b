"""Tensors past 2^31 elements (issues 3 and 8: 64-bit indexing everywhere).

A weight of N x K > 2^31 elements (an lm_head of a 256k vocabulary at K = 8192 is one) and an
[E, N, K] stack of that size go through quantize, dequantize, repack, dequantize_tiled, gemm
and grouped_gemm on the GPU. Rows are independent, so the rows past element 2^31 are checked
against the CPU ops run on just those rows (bit-exact) and against a float64 matmul.
Needs about 16 GB of free GPU memory; skipped with less.
"""
from __future__ import annotations

import pytest
import torch

import kbit
from cuda_utils import assert_bitwise_equal

ops = torch.ops.kbit
pytestmark = pytest.mark.gpu

K = 32768
N = 2**31 // K + 7          # 65543 rows: 2^31 + 7 * 32768 elements, last tile partial
TAIL = slice(N - 9, N)      # rows that start past element 2^31
NEED_BYTES = 16 * 2**30


def _need_memory():
    free, _ = torch.cuda.mem_get_info()
    if free < NEED_BYTES:
        pytest.skip(f"needs {NEED_BYTES >> 30} GiB of free GPU memory, {free >> 30} GiB free")


def _weight(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    W = torch.randn(shape, generator=g, device="cuda", dtype=torch.float16)
    # a larger row next to the end so row scales differ across the tail (y stays in fp16 range)
    W[..., -2, :] *= 16.0
    return W


@pytest.mark.parametrize("k", [2, 5])
def test_format_ops_past_2_31_elements(k):
    _need_memory()
    cb = kbit.codebook(k).cuda()
    W = _weight((N, K), 31 + k)
    assert W.numel() > 2**31
    packed, absmax, rs = ops.quantize(W, cb, k)
    p_cpu, a_cpu, r_cpu = ops.quantize(W[TAIL].cpu(), cb.cpu(), k)
    assert_bitwise_equal(packed[TAIL], p_cpu, "packed tail")
    assert_bitwise_equal(absmax[TAIL], a_cpu, "absmax tail")
    assert_bitwise_equal(rs[TAIL], r_cpu, "row_scale tail")
    del W
    want = ops.dequantize(p_cpu, a_cpu, r_cpu, cb.cpu(), k, torch.float16)

    out = ops.dequantize(packed, absmax, rs, cb, k, torch.float16)
    assert_bitwise_equal(out[TAIL], want, "dequantize tail")
    assert_bitwise_equal(out[:3], ops.dequantize(packed[:3].cpu(), absmax[:3].cpu(), rs[:3].cpu(),
                                                 cb.cpu(), k, torch.float16), "dequantize head")
    del out

    tp, ta = ops.repack(packed, absmax)
    out = ops.dequantize_tiled(tp, ta, rs, cb, k, K, torch.float16)
    assert_bitwise_equal(out[TAIL], want, "dequantize_tiled tail")
    del out

    # seeded: an unseeded x made this check depend on the RNG state the earlier tests left (the
    # full GPU suite on a 2 x H100 machine once failed here with "A...", not reproduced alone)
    x = torch.randn(3, K, generator=torch.Generator(device="cuda").manual_seed(3 + k), device="cuda",
                    dtype=torch.float16)
    y = ops.gemm(x, tp, ta, rs, cb, k)
    ref = x.double().cpu() @ want.double().t()
    err = (y[:, TAIL].double().cpu() - ref).norm() / ref.norm()
    assert err < 1e-3, f"gemm tail relative error {float(err):.3e} (k={k})"


def test_grouped_stack_past_2_31_elements():
    _need_memory()
    k, E = 4, 2
    n = 2**31 // (E * K) + 5    # E * n * K > 2^31
    cb = kbit.codebook(k).cuda()
    W = _weight((E, n, K), 7)
    assert W.numel() > 2**31
    packed, absmax, rs = ops.quantize(W, cb, k)
    last = W[E - 1, n - 4:].cpu()
    del W
    p_cpu, a_cpu, r_cpu = ops.quantize(last, cb.cpu(), k)
    assert_bitwise_equal(packed[E - 1, n - 4:], p_cpu, "packed tail")
    assert_bitwise_equal(absmax[E - 1, n - 4:], a_cpu, "absmax tail")
    tp, ta = ops.repack(packed, absmax)
    del packed, absmax
    want = ops.dequantize(p_cpu, a_cpu, r_cpu, cb.cpu(), k, torch.float16)

    x = torch.randn(5, K, generator=torch.Generator(device="cuda").manual_seed(5), device="cuda", dtype=torch.float16)
    offsets = torch.tensor([0, 2, 5], dtype=torch.int32, device="cuda")  # expert 1 owns rows 2..4
    y = ops.grouped_gemm(x, tp, ta, rs, cb, offsets, k)
    ref = x[2:].double().cpu() @ want.double().t()
    err = (y[2:, n - 4:].double().cpu() - ref).norm() / ref.norm()
    assert err < 1e-3, float(err)
