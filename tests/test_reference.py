"""Self-checks of tests/reference.py against docs/format.md (no kbit ops involved)."""
import ctypes
import ctypes.util
import struct

import pytest
import torch

import reference as R

F32 = torch.float32


def _libm_fmaf():
    name = ctypes.util.find_library("m")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.fmaf.restype = ctypes.c_float
    lib.fmaf.argtypes = [ctypes.c_float] * 3
    return lib.fmaf


def _bits(x: float) -> bytes:
    return struct.pack("<f", x)


def test_e4m4_table_matches_format_doc():
    t = R.E4M4
    assert t.dtype == F32 and t.shape == (256,)
    assert t[0] == 0
    assert (t[1:] > t[:-1]).all(), "decoding must be strictly increasing in the byte"
    for m in range(16):
        assert t[m] == m * 2.0 ** -11
    for e in range(1, 16):
        for m in range(16):
            assert t[16 * e + m] == (1 + m / 16) * 2.0 ** (e - 8)
    assert t[16] == 2.0 ** -7 and t[255] == 248.0
    normal = t[16:].double()
    step = normal[1:] / normal[:-1] - 1
    assert step.max() <= 1 / 16 + 1e-12


def test_bracketing_codes():
    a = torch.cat([R.E4M4, (R.E4M4[1:] + R.E4M4[:-1]) / 2, torch.tensor([1e-9, 300.0])])
    down, up = R.bracketing_codes(a)
    for ai, d, u in zip(a.tolist(), down.tolist(), up.tolist()):
        assert R.E4M4[d] <= ai and (d == 255 or R.E4M4[d + 1] > ai)
        if ai <= 248:
            assert R.E4M4[u] >= ai and (u == 0 or R.E4M4[u - 1] < ai)
        assert (d == u) == (ai in R.E4M4.tolist() or ai > 248)


def test_row_scale_rule(gen):
    mags = torch.pow(2.0, torch.empty(2000).uniform_(-149, 127, generator=gen)).float()
    mags = mags[mags > 0]
    W = torch.zeros(mags.numel(), 32)
    W[:, 5] = mags
    rs = R.row_scale(W)
    e = torch.frexp(rs.double()).exponent - 1
    assert (torch.frexp(rs).mantissa == 0.5).all(), "row scales must be powers of two"
    assert (e >= -126).all()
    ratio = mags.double() / rs.double()
    top = e > -126  # not clamped
    assert ((ratio[top] > 124) & (ratio[top] <= 248)).all()
    assert (ratio[~top] <= 248).all()
    edge = torch.tensor([[124.0] + [0.0] * 31, [124.00001] + [0.0] * 31, [248.0] + [0.0] * 31,
                         [0.0] * 32, [float("nan")] + [0.0] * 31, [float("inf")] + [0.0] * 31])
    assert R.row_scale(edge)[:4].tolist() == [0.5, 1.0, 1.0, 1.0]
    assert torch.isnan(R.row_scale(edge)[4:]).all()


def test_fma_double_rounding_case():
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is a float32 midpoint; + 2^-80 must round up. The naive
    # float32(float64 product + c) loses c and rounds the tie to even (down).
    a = torch.tensor([1 + 2.0 ** -12], dtype=F32)
    c = torch.tensor([2.0 ** -80], dtype=F32)
    exact = 1 + 2.0 ** -11 + 2.0 ** -23
    naive = (a.double() * a.double() + c.double()).float()
    assert naive.item() != exact
    assert R.fma_f32(a, a, c).item() == exact
    assert R.fma_f32(-a, a, -c).item() == -exact


def test_fma_matches_libm(gen):
    fmaf = _libm_fmaf()
    if fmaf is None:
        pytest.skip("libm fmaf not reachable through ctypes")
    n = 20000

    def rnd(lo, hi):
        m = torch.rand(n, generator=gen, dtype=torch.float64) + 0.5
        e = torch.randint(lo, hi, (n,), generator=gen).double()
        s = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).double()
        return (s * m * torch.pow(2.0, e)).float()

    a, b, c = rnd(-60, 60), rnd(-60, 60), rnd(-140, 60)
    # like the format's -cb * s + w: b with a 5-bit mantissa, c close to -a*b
    half = n // 2
    b[:half] = (torch.randint(16, 32, (half,), generator=gen).double()
                * torch.pow(2.0, torch.randint(-30, 10, (half,), generator=gen).double())).float()
    c[:half // 2] = (-(a[:half // 2].double() * b[:half // 2].double())
                     * (1 + 1e-3 * torch.randn(half // 2, generator=gen, dtype=torch.float64))).float()
    got = R.fma_f32(a, b, c)
    bad = [i for i in range(n)
           if _bits(fmaf(a[i].item(), b[i].item(), c[i].item())) != _bits(got[i].item())]
    assert not bad, f"{len(bad)} mismatches, e.g. index {bad[0]}"


def test_butterfly_order():
    # element j + 16 pairs with j first: 1e8 + (-1e8) cancels before the 1s are added.
    v = torch.zeros(32, dtype=F32)
    v[0], v[16] = 1e8, -1e8
    v[1:16] = 1.0
    assert R.butterfly_sum32(v).item() == 15.0
    assert v.sum(dtype=torch.float64).item() == 15.0
    w = torch.zeros(32, dtype=F32)
    w[0], w[1], w[16] = 1e8, 1.0, -1e8  # level 1: (1e8 - 1e8), (1 + 0): exact
    assert R.butterfly_sum32(w).item() == 1.0
    x = torch.zeros(32, dtype=F32)
    x[0], x[16], x[8] = 1e8, 1.0, -1e8  # level 1 adds 1e8 + 1 (rounds to 1e8) first
    assert R.butterfly_sum32(x).item() == 0.0
    assert torch.cumsum(x, 0)[-1].item() == 1.0  # a sequential sum would give 1


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_pack_unpack_round_trip(k, gen):
    idx = torch.randint(0, 1 << k, (3, 7, 96), generator=gen)
    packed = R.pack_flat(idx, k)
    assert packed.dtype == torch.int32 and packed.shape == (3, 7, 3, k)
    assert torch.equal(R.unpack_flat(packed), idx)
    # bit j of word p of block b is bit p of the index of weight 32 b + j
    b, j, p = 2, 31, k - 1
    n = 4
    bit = (int(packed[1, n, b, p]) >> j) & 1
    assert bit == (int(idx[1, n, 32 * b + j]) >> p) & 1


def test_tile_coords_cover_tile_once():
    row, col = R.tile_coords()
    cells = torch.stack([row, col], -1).reshape(-1, 2)
    pairs = {(r, c) for r, c in cells.tolist()}
    assert len(pairs) == 32 * 64
    assert pairs == {(r, c) for r in range(16) for c in range(0, 256, 2)}


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_stream_bits_disjoint(k):
    # every index bit of every pair lands on its own stream bit, all 16k bytes used
    ones = torch.full((1, 32, 64), (1 << k) - 1, dtype=torch.int64)
    words = R._stream_words(ones, ones, k)
    assert words.shape == (1, 32, 4 * k)
    assert (words == 2 ** 32 - 1).all()
    for c in (0, 47, 48, 63):
        for which in ("a", "b"):
            for bit in range(k):
                a = torch.zeros(1, 32, 64, dtype=torch.int64)
                b = torch.zeros(1, 32, 64, dtype=torch.int64)
                (a if which == "a" else b)[0, 0, c] = 1 << bit
                w = R._stream_words(a, b, k)[0, 0]
                assert sum(bin(int(x)).count("1") for x in w) == 1


def test_scale_reciprocal_and_nan_index():
    s = torch.tensor([0.0, 2.0 ** -11, 3.0, 248.0], dtype=F32)
    r = R.scale_reciprocal(s)
    third = torch.tensor(1.0) / torch.tensor(3.0)  # float32 IEEE division
    assert r.dtype == F32 and r[:2].tolist() == [0.0, 2.0 ** 11] and r[2] == third
    assert r[3] == (torch.tensor(1.0) / torch.tensor(248.0))
    cb = torch.tensor([-1.0, -0.25, 0.5, 1.0])
    x = torch.tensor([float("nan"), -0.625, -0.62, 0.125, 0.75, 0.76, 5.0])
    # midpoints -0.625, 0.125, 0.75: on a midpoint -> lower index; NaN -> 0
    assert R.nearest_index(x, cb).tolist() == [0, 0, 1, 1, 2, 3, 3]


def test_normalized_blocks_exact_power_of_two(gen):
    W = torch.randn(6, 64, generator=gen) * torch.pow(2.0, torch.arange(6) * 20.0 - 50).unsqueeze(-1)
    W[2] = float("nan")
    rs = R.row_scale(W)
    wn = R.normalized_blocks(W, rs).reshape(6, 64)
    ok = torch.arange(6) != 2
    assert torch.equal(wn[ok] * rs[ok].unsqueeze(-1), W[ok])  # exact scaling
    assert (wn[ok].abs().amax(-1) > 124).all() and (wn[ok].abs().amax(-1) <= 248).all()
    assert (wn[2] == 0).all()
