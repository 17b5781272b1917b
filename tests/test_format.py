"""CPU quantize / dequantize are bit-identical to the pure-PyTorch reference (docs/format.md)."""
import pytest
import torch

import kbit
import reference as R
from conftest import ADVERSARIAL_KINDS, KS, W_DTYPES, make_weight, random_codebook, random_flat

SHAPES = [(1, 32), (3, 96), (17, 512), (100, 2048), (2, 17, 96), (4, 3, 512)]
ADV_SHAPE = (19, 320)


def op_quantize(W, cb, k):
    return torch.ops.kbit.quantize(W, cb, k)


def assert_same_quantization(got, want):
    names = ("packed", "absmax", "row_scale")
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        if name == "row_scale":
            assert torch.equal(torch.isnan(g), torch.isnan(w)), name
            g, w = torch.nan_to_num(g), torch.nan_to_num(w)
        diff = (g != w)
        assert not diff.any(), f"{name}: {int(diff.sum())} of {diff.numel()} differ, first at " \
                               f"{tuple(diff.nonzero()[0].tolist())}"


def sqnr_rows_db(W, W_hat):
    """Per-row SQNR (dB) of W [N, K]."""
    W, W_hat = W.double(), W_hat.double()
    return 10 * torch.log10((W ** 2).sum(-1) / ((W - W_hat) ** 2).sum(-1))


# ---------------------------------------------------------------------------------------------
# E4M4 and codebooks
# ---------------------------------------------------------------------------------------------
def test_e4m4_decode_by_dequantize():
    # One row, 256 blocks: block c has absmax code c and every index at the codebook's +1 entry:
    # dequantize then yields e4m4(c) * row_scale(=1) * 1.
    k = 2
    packed = torch.full((1, 256, k), -1, dtype=torch.int32)  # all index bits set: index 3
    absmax = torch.arange(256, dtype=torch.int64).to(torch.uint8).view(1, 256)
    out = torch.ops.kbit.dequantize(packed, absmax, torch.ones(1), kbit.codebook(k), k, torch.float32)
    decoded = out.view(256, 32)
    assert (decoded == decoded[:, :1]).all()
    assert torch.equal(decoded[:, 0], R.E4M4)


@pytest.mark.parametrize("k", KS)
def test_default_codebook_is_normal_float(k):
    from statistics import NormalDist
    n = 1 << k
    q = [NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]
    m = max(abs(v) for v in q)
    want = torch.tensor([v / m for v in q], dtype=torch.float64).float()
    cb = kbit.codebook(k)
    assert cb.dtype == torch.float32 and cb.shape == (n,)
    assert torch.equal(cb, want)
    assert cb[0] == -1 and cb[-1] == 1 and (cb[1:] > cb[:-1]).all()


# ---------------------------------------------------------------------------------------------
# quantize == reference
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_matches_reference(k, dtype, shape, gen):
    W = make_weight("normal", shape, dtype, gen=gen)
    cb = kbit.codebook(k)
    W_before = W.clone()
    got = op_quantize(W, cb, k)
    assert torch.equal(W, W_before)
    assert_same_quantization(got, R.quantize(W, cb, k))


@pytest.mark.parametrize("kind", ADVERSARIAL_KINDS)
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_adversarial_matches_reference(k, dtype, kind, gen):
    W = make_weight(kind, ADV_SHAPE, dtype, k=k, gen=gen)
    cb = kbit.codebook(k)
    assert_same_quantization(op_quantize(W, cb, k), R.quantize(W, cb, k))


@pytest.mark.parametrize("k", KS)
def test_quantize_user_codebook_matches_reference(k, gen):
    W = make_weight("normal", (9, 256), torch.float32, gen=gen)
    for cb in (random_codebook(k, gen), random_codebook(k, gen, include_ends=True),
               torch.linspace(-1, 1, 1 << k), torch.linspace(-0.5, 0.25, 1 << k)):
        assert_same_quantization(op_quantize(W, cb, k), R.quantize(W, cb, k))


@pytest.mark.parametrize("k", KS)
def test_quantize_non_contiguous_input(k, gen):
    W = make_weight("normal", (64, 96), torch.float32, gen=gen)
    Wt = W.t().contiguous().t()  # same values, column-major strides
    assert not Wt.is_contiguous()
    cb = kbit.codebook(k)
    assert_same_quantization(op_quantize(Wt, cb, k), op_quantize(W, cb, k))


@pytest.mark.parametrize("k", KS)
def test_rows_and_experts_are_independent(k, gen):
    W = make_weight("mixed_rows", (3, 5, 128), torch.float32, gen=gen)
    cb = kbit.codebook(k)
    p, a, r = op_quantize(W, cb, k)
    for e in range(3):
        pe, ae, re = op_quantize(W[e], cb, k)
        assert torch.equal(p[e], pe) and torch.equal(a[e], ae) and torch.equal(r[e], re)
        for n in (0, 4):
            pn, an, rn = op_quantize(W[e, n:n + 1], cb, k)
            assert torch.equal(p[e, n:n + 1], pn) and torch.equal(a[e, n:n + 1], an)
            assert torch.equal(r[e, n:n + 1], rn)


# ---------------------------------------------------------------------------------------------
# properties of the quantization rule
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["normal", "outlier_per_block", "subnormal_blocks", "small_integers"])
@pytest.mark.parametrize("k", KS)
def test_chosen_code_beats_both_bracketing_codes(k, kind, gen):
    W = make_weight(kind, (32, 512), torch.float32, k=k, gen=gen)
    cb = kbit.codebook(k)
    _, absmax, rs = op_quantize(W, cb, k)
    a = R.normalized_blocks(W, rs).abs().amax(-1)
    down, up = R.bracketing_codes(a)
    code = absmax.long()
    assert ((code == down) | (code == up)).all(), "the stored code must bracket the block absmax"
    err = R.block_error(W, code, rs, cb)
    err_down = R.block_error(W, down, rs, cb)
    err_up = R.block_error(W, up, rs, cb)
    assert (err <= err_down).all() and (err <= err_up).all()
    # ties go to up (which never clips)
    tie = (err_down == err_up) & (down != up)
    assert (code[tie] == up[tie]).all()
    # and the choice matters: both codes are used on this data
    if kind == "normal":
        assert (code == down).any() and ((code == up) & (down != up)).any()


@pytest.mark.parametrize("k", KS)
def test_midpoint_ties_take_lower_index(k):
    # Every block holds 128 at position 0 and the row scale is 1, so s = 128 exactly and
    # (mid_j * 128) / s == mid_j: the value sits exactly on the midpoint.
    cb = kbit.codebook(k)
    mid = R.midpoints(cb)
    on = mid * 128
    above = torch.nextafter(mid, torch.tensor(float("inf"))) * 128  # x = nextafter(mid_j) exactly
    vals = torch.stack([on, above], -1).reshape(-1)
    nb = (vals.numel() + 30) // 31
    body = torch.zeros(nb * 31)
    body[:vals.numel()] = vals
    W = torch.cat([torch.full((nb, 1), 128.0), body.view(nb, 31)], -1).reshape(1, nb * 32)
    p, a, r = op_quantize(W, cb, k)
    assert r.item() == 1.0 and (a == 240).all()  # 240 = e4m4 code of 128 = 16 * 2^(15 - 12)
    idx = R.unpack_flat(p).reshape(nb, 32)[:, 1:].reshape(-1)[:vals.numel()]
    j = torch.arange(mid.numel())
    assert torch.equal(idx[0::2], j), "a value exactly on mid_j must take index j"
    assert torch.equal(idx[1::2], j + 1), "a value just above mid_j must take index j + 1"


@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_row_scale_rule(dtype, gen):
    W = make_weight("mixed_rows", (64, 64), dtype, gen=gen)
    W[3] = 0
    _, _, rs = op_quantize(W, kbit.codebook(4), 4)
    assert rs.dtype == torch.float32
    assert (torch.frexp(rs).mantissa == 0.5).all(), "row scales must be powers of two"
    assert rs[3] == 1.0, "an all-zero row gets row_scale 1"
    ratio = W.float().abs().amax(-1).double() / rs.double()
    nz = torch.arange(64) != 3
    assert ((ratio[nz] > 124) & (ratio[nz] <= 248)).all()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_non_finite_row_gets_nan_scale(dtype, bad, gen):
    W = make_weight("normal", (5, 64), dtype, gen=gen)
    W[2, 37] = bad
    p, a, rs = op_quantize(W, kbit.codebook(3), 3)
    assert torch.isnan(rs[2]) and torch.isfinite(rs[torch.arange(5) != 2]).all()
    out = torch.ops.kbit.dequantize(p, a, rs, kbit.codebook(3), 3, torch.float32)
    assert torch.isnan(out[2]).all(), "a non-finite row must dequantize to NaN, never finite values"
    assert torch.isfinite(out[torch.arange(5) != 2]).all()
    ok = torch.arange(5) != 2
    want = R.quantize(W[ok], kbit.codebook(3), 3)
    assert_same_quantization((p[ok], a[ok], rs[ok]), want)


def test_all_zero_blocks_and_rows(gen):
    W = make_weight("normal", (4, 128), torch.float32, gen=gen)
    W[0] = 0
    W[2, 32:64] = 0
    cb = kbit.codebook(4)
    p, a, rs = op_quantize(W, cb, 4)
    assert rs[0] == 1 and (a[0] == 0).all() and a[2, 1] == 0
    out = torch.ops.kbit.dequantize(p, a, rs, cb, 4, torch.float32)
    assert (out[0] == 0).all() and (out[2, 32:64] == 0).all()
    assert (out[2, :32] != 0).all() and (out[1] != 0).all()


# ---------------------------------------------------------------------------------------------
# extreme magnitudes: quantize as well as normal data (never to zeros, never clipped)
# ---------------------------------------------------------------------------------------------
CASES = [
    ("fp32 1e-20", torch.float32, 1e-20),
    ("fp32 1e-30", torch.float32, 1e-30),
    ("fp32 1e30", torch.float32, 1e30),
    ("fp32 1e-40 subnormal", torch.float32, 1e-40),
    ("bf16 1e-20", torch.bfloat16, 1e-20),
    ("bf16 1e30", torch.bfloat16, 1e30),
    ("fp16 1e-6", torch.float16, 1e-6),
    ("fp16 1e-3", torch.float16, 1e-3),
    ("fp16 1e4", torch.float16, 1e4),
]
# fp16 at 1e-6 is subnormal in fp16 itself (few significant bits): each case is compared
# against the very same values scaled back to ~1.


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("name,dtype,scale", CASES, ids=[c[0] for c in CASES])
def test_extreme_layers_quantize_like_normal_data(name, dtype, scale, k, gen):
    base = make_weight("normal", (64, 512), torch.float32, gen=gen)
    W = (base * scale).to(dtype)
    ref_W = (W.double() / scale).float()  # the same values (after the dtype cast) at scale ~1
    qw = kbit.quantize(W, k=k, layout="flat")
    out = kbit.dequantize(qw, torch.float32)
    assert torch.isfinite(out).all()
    assert (out != 0).all(), "the default codebooks have no zero entry: nothing may vanish"
    got_db = R.sqnr_db(W.float(), out)
    ref_out = kbit.dequantize(kbit.quantize(ref_W, k=k, layout="flat"), torch.float32)
    want_db = R.sqnr_db(ref_W, ref_out)
    assert got_db > want_db - 1.0, f"{name}: SQNR {got_db:.2f} dB vs {want_db:.2f} dB at scale 1"
    # never clipped: the largest weight of each row keeps at least 16/17 of its magnitude (the
    # 'down' code is at most one E4M4 step, 1/16, below the block absmax)
    row_max = W.float().abs().amax(-1)
    assert (out.abs().amax(-1) >= row_max * (16 / 17)).all()


@pytest.mark.parametrize("k", KS)
def test_outlier_row_next_to_normal_rows(k, gen):
    W = make_weight("normal", (16, 512), torch.float32, gen=gen)
    W[5] *= 1e30
    qw = kbit.quantize(W, k=k, layout="flat")
    out = kbit.dequantize(qw, torch.float32)
    assert torch.isfinite(out).all()
    # the outlier row is quantized about as well as the same row at scale 1
    outlier_db = sqnr_rows_db(W[5:6], out[5:6]).item()
    row1 = W[5:6] / 1e30
    row1_db = sqnr_rows_db(row1, kbit.dequantize(kbit.quantize(row1, k=k), torch.float32)).item()
    assert outlier_db > row1_db - 1.0, (outlier_db, row1_db)
    # and the normal rows are exactly what they would be without the outlier row
    alone = kbit.quantize(W[torch.arange(16) != 5], k=k, layout="flat")
    assert torch.equal(qw.packed[torch.arange(16) != 5], alone.packed)
    assert torch.equal(qw.absmax[torch.arange(16) != 5], alone.absmax)


@pytest.mark.parametrize("k", KS)
def test_outlier_per_block_is_represented(k, gen):
    W = make_weight("outlier_per_block", (8, 256), torch.float32, gen=gen)
    out = kbit.dequantize(kbit.quantize(W, k=k, layout="flat"), torch.float32)
    Wb, Ob = W.view(8, 8, 32), out.view(8, 8, 32)
    pos = Wb.abs().argmax(-1, keepdim=True)
    w_out, o_out = Wb.gather(-1, pos), Ob.gather(-1, pos)
    # the outlier lands on a codebook extreme times a scale within one E4M4 step of it
    rel = ((o_out - w_out).abs() / w_out.abs())
    assert (rel <= 1 / 16).all(), rel.max()


@pytest.mark.parametrize("j", [-100, -55, -20, -7, 3, 20, 55, 80, 100])
@pytest.mark.parametrize("k", [2, 5])
def test_power_of_two_scale_invariance(k, j, gen):
    # format.md s.4 works in the row-normalized domain: scaling W by 2^j scales row_scale by 2^j
    # and changes nothing else (as long as W * 2^j itself is exact and the row scale unclamped)
    W = make_weight("normal", (32, 256), torch.float32, gen=gen)
    cb = kbit.codebook(k)
    p, a, r = op_quantize(W, cb, k)
    p2, a2, r2 = op_quantize(W * 2.0 ** j, cb, k)
    assert torch.equal(p, p2) and torch.equal(a, a2) and torch.equal(r * 2.0 ** j, r2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_weights_near_float_max_dequantize_finite(dtype, gen):
    # e4m4(up) * row_scale would overflow for |w| > 124 * 2^121: the op must take 'down'
    W = make_weight("normal", (4, 64), torch.float32, gen=gen)
    W[1] = torch.sign(W[1]) * torch.finfo(dtype).max
    W[2, :32] = 3.3e38
    W = W.to(dtype)
    cb = kbit.codebook(4)
    got = op_quantize(W, cb, 4)
    assert_same_quantization(got, R.quantize(W, cb, 4))
    out = torch.ops.kbit.dequantize(*got, cb, 4, torch.float32)
    assert torch.isfinite(out).all()
    assert sqnr_rows_db(W[1:3].float(), out[1:3]).min() > 20


# ---------------------------------------------------------------------------------------------
# dequantize == reference
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("out_dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_dequantize_random_bits_matches_reference(k, out_dtype, gen):
    # any bits are a valid flat encoding: all 256 absmax codes, random indices and row scales
    for shape in [(7, 96), (3, 5, 64)]:
        packed, absmax, rs = random_flat(shape, k, gen)
        cb = random_codebook(k, gen)
        got = torch.ops.kbit.dequantize(packed, absmax, rs, cb, k, out_dtype)
        want = R.dequantize(packed, absmax, rs, cb, out_dtype)
        assert got.dtype == out_dtype and got.shape == shape
        assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_dequantize_quantized_matches_reference(k, dtype, gen):
    W = make_weight("subnormal_blocks", (33, 512), dtype, gen=gen)
    cb = kbit.codebook(k)
    p, a, r = op_quantize(W, cb, k)
    for out_dtype in W_DTYPES:
        got = torch.ops.kbit.dequantize(p, a, r, cb, k, out_dtype)
        assert torch.equal(got, R.dequantize(p, a, r, cb, out_dtype))
