"""CPU repack / unrepack / dequantize_tiled against the reference tiled layout (format.md s. 5)."""
import pytest
import torch

import kbit
import reference as R
from conftest import KS, W_DTYPES, make_weight, random_codebook, random_flat

# (N, K): odd N, K not a multiple of the 256-column tile, several tiles each way
SHAPES = [(1, 32), (3, 96), (16, 256), (17, 288), (100, 512), (33, 2080)]
ids = lambda s: "x".join(map(str, s))  # noqa: E731


def test_tiled_layout_version():
    # tests/reference.py implements version 4 of the tiled layout
    assert kbit._C.tiled_layout_version == 4


@pytest.mark.parametrize("shape", SHAPES, ids=ids)
@pytest.mark.parametrize("k", KS)
def test_repack_matches_reference(k, shape, gen):
    packed, absmax, _ = random_flat(shape, k, gen)
    pt, at = torch.ops.kbit.repack(packed, absmax)
    want_p, want_a = R.repack(packed, absmax)
    N, K = shape
    assert pt.dtype == torch.int32 and pt.shape == ((N + 15) // 16, (K + 255) // 256, k, 32, 4)
    assert at.dtype == torch.uint8 and at.shape == ((N + 15) // 16, (K + 255) // 256, 128)
    assert torch.equal(pt, want_p)
    assert torch.equal(at, want_a)


@pytest.mark.parametrize("shape", SHAPES, ids=ids)
@pytest.mark.parametrize("k", KS)
def test_unrepack_inverts_repack(k, shape, gen):
    packed, absmax, _ = random_flat(shape, k, gen)
    p2, a2 = torch.ops.kbit.unrepack(*torch.ops.kbit.repack(packed, absmax), *shape)
    assert torch.equal(p2, packed) and torch.equal(a2, absmax)


@pytest.mark.parametrize("k", KS)
def test_unrepack_of_reference_layout(k, gen):
    # unrepack reads the documented layout, not just whatever repack writes
    shape = (21, 544)
    packed, absmax, _ = random_flat(shape, k, gen)
    p2, a2 = torch.ops.kbit.unrepack(*R.repack(packed, absmax), *shape)
    assert torch.equal(p2, packed) and torch.equal(a2, absmax)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("shape", [(1, 32), (17, 288), (30, 544)], ids=ids)
def test_padding_is_zero(shape, k):
    # every index at 2^k - 1 and every absmax at 255: exactly N * K * k index bits are set in the
    # tiled words and N * K/32 absmax bytes are nonzero; all padding stays 0
    N, K = shape
    packed = torch.full((N, K // 32, k), -1, dtype=torch.int32)
    absmax = torch.full((N, K // 32), 255, dtype=torch.uint8)
    pt, at = torch.ops.kbit.repack(packed, absmax)
    words = pt.view(-1).to(torch.int64) & 0xFFFFFFFF
    set_bits = sum(bin(w).count("1") for w in words.tolist())
    assert set_bits == N * K * k
    assert int((at == 255).sum()) == N * K // 32 and int((at != 0).sum()) == N * K // 32
    # and padding rows/columns dequantize to nothing: row tile padding is invisible in the output
    out = torch.ops.kbit.dequantize_tiled(pt, at, torch.ones(N), kbit.codebook(k), k, K, torch.float32)
    assert out.shape == (N, K) and (out == 248).all()


@pytest.mark.parametrize("k", KS)
def test_repack_expert_stack_per_expert(k, gen):
    E, N, K = 3, 19, 288
    packed, absmax, _ = random_flat((E, N, K), k, gen)
    pt, at = torch.ops.kbit.repack(packed, absmax)
    assert pt.shape == (E, 2, 2, k, 32, 4) and at.shape == (E, 2, 2, 128)
    for e in range(E):
        pe, ae = torch.ops.kbit.repack(packed[e].contiguous(), absmax[e].contiguous())
        assert torch.equal(pt[e], pe) and torch.equal(at[e], ae)
    p2, a2 = torch.ops.kbit.unrepack(pt, at, N, K)
    assert torch.equal(p2, packed) and torch.equal(a2, absmax)


@pytest.mark.parametrize("out_dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_dequantize_tiled_equals_flat(k, out_dtype, gen):
    for shape in [(17, 288), (2, 33, 544)]:
        packed, absmax, rs = random_flat(shape, k, gen)
        cb = random_codebook(k, gen)
        pt, at = torch.ops.kbit.repack(packed, absmax)
        got = torch.ops.kbit.dequantize_tiled(pt, at, rs, cb, k, shape[-1], out_dtype)
        flat = torch.ops.kbit.dequantize(packed, absmax, rs, cb, k, out_dtype)
        assert got.dtype == out_dtype and got.shape == shape
        assert torch.equal(got, flat)
        assert torch.equal(got, R.dequantize(packed, absmax, rs, cb, out_dtype))


@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_api_tiled_equals_reference(k, dtype, gen):
    W = make_weight("normal", (40, 800), dtype, gen=gen)
    qw = kbit.quantize(W, k=k)
    assert qw.layout == "tiled"
    p, a, rs = R.quantize(W, kbit.codebook(k), k)
    want_p, want_a = R.repack(p, a)
    assert torch.equal(qw.packed, want_p) and torch.equal(qw.absmax, want_a)
    assert torch.equal(qw.row_scale, rs)
