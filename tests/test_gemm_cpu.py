"""CPU kbit.gemm / kbit.grouped_gemm against the float64 reference."""
import pytest
import torch

import kbit
import reference as R
from conftest import ACT_DTYPES, GEMM_RTOL, KS, make_weight, random_codebook

MS = [0, 1, 3, 17, 64]
NK = [(17, 96), (100, 544)]


def rel_err(y, ref):
    y, ref = y.double(), ref.double()
    return float((y - ref).norm() / ref.norm())


def ref_dequant(qw):
    """float64 [*, N, K] from the weight's flat tensors, via the reference decoder."""
    flat = qw.to_layout("flat")
    return R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double()


def check_gemm(y, x, W_hat64, dtype):
    ref = R.gemm(x, W_hat64)
    assert y.dtype == dtype and y.shape == ref.shape
    assert not torch.isnan(y).any()
    if ref.numel():
        assert rel_err(y, ref) <= GEMM_RTOL[dtype]


@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("nk", NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemm_matches_reference(k, dtype, nk, M, gen):
    N, K = nk
    qw = kbit.quantize(make_weight("normal", (N, K), dtype, gen=gen), k=k)
    x = torch.randn(M, K, generator=gen).to(dtype)
    x_before = x.clone()
    y = kbit.gemm(x, qw)
    assert torch.equal(x, x_before)
    check_gemm(y, x, ref_dequant(qw), dtype)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("lead", [(), (2, 3), (1, 0), (4, 1, 5)], ids=str)
def test_gemm_leading_dims(lead, dtype, gen):
    N, K = 33, 288
    qw = kbit.quantize(make_weight("normal", (N, K), gen=gen), k=4)
    x = torch.randn(*lead, K, generator=gen).to(dtype)
    y = kbit.gemm(x, qw)
    assert y.shape == (*lead, N) and y.dtype == dtype
    y2 = kbit.gemm(x.reshape(-1, K), qw)
    assert torch.equal(y.reshape(-1, N), y2)
    check_gemm(y2, x.reshape(-1, K), ref_dequant(qw), dtype)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemm_non_contiguous_x(dtype, gen):
    qw = kbit.quantize(make_weight("normal", (24, 256), gen=gen), k=3)
    xt = torch.randn(256, 10, generator=gen).to(dtype).t()  # [10, 256], column-major
    assert not xt.is_contiguous()
    y = kbit.gemm(xt, qw)
    assert torch.equal(y, kbit.gemm(xt.contiguous(), qw))
    check_gemm(y, xt, ref_dequant(qw), dtype)


@pytest.mark.parametrize("k", KS)
def test_gemm_user_codebook(k, gen):
    cb = random_codebook(k, gen)
    W = make_weight("normal", (40, 320), gen=gen)
    qw = kbit.quantize(W, k=k, codebook=cb)
    assert torch.equal(qw.codebook, cb)
    x = torch.randn(7, 320, generator=gen).half()
    check_gemm(kbit.gemm(x, qw), x, ref_dequant(qw), torch.float16)


@pytest.mark.parametrize("kind", ["outlier_row", "subnormal_blocks", "zero_blocks", "mixed_rows"])
def test_gemm_adversarial_weights(kind, gen):
    W = make_weight(kind, (48, 512), torch.float32, gen=gen)
    if kind == "mixed_rows":  # keep the product inside fp16 range
        W = W / W.abs().amax(-1, keepdim=True)
    qw = kbit.quantize(W, k=4)
    x = torch.randn(64, 512, generator=gen).bfloat16()
    W_hat = ref_dequant(qw)
    y = kbit.gemm(x, qw)
    assert torch.isfinite(y).all()
    ref = R.gemm(x, W_hat)
    # per-output-feature relative error: rows of very different magnitude each meet the tolerance
    err = (y.double() - ref).norm(dim=0) / ref.norm(dim=0).clamp_min(1e-300)
    nz = ref.norm(dim=0) > 0
    assert (err[nz] <= GEMM_RTOL[torch.bfloat16]).all()
    assert (y.double()[:, ~nz] == 0).all()


def test_gemm_weights_beyond_fp16_range(gen):
    # fp32 weights up to ~1e6 (beyond fp16's 65504) with small fp16 activations: the product
    # fits fp16 though the weights do not, so the result must be finite and accurate
    W = make_weight("normal", (64, 512), torch.float32, gen=gen)
    W[::3] *= 3e5
    qw = kbit.quantize(W, k=4)
    x = (torch.randn(32, 512, generator=gen) * 1e-3).half()
    y = kbit.gemm(x, qw)
    ref = R.gemm(x, ref_dequant(qw))
    assert ref.abs().max() < 60000
    assert torch.isfinite(y).all()
    err = (y.double() - ref).norm(dim=0) / ref.norm(dim=0)
    assert (err <= GEMM_RTOL[torch.float16]).all(), err.max()


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemm_deterministic(dtype, gen):
    qw = kbit.quantize(make_weight("normal", (130, 1056), gen=gen), k=5)
    x = torch.randn(33, 1056, generator=gen).to(dtype)
    assert torch.equal(kbit.gemm(x, qw), kbit.gemm(x, qw))


# ---------------------------------------------------------------------------------------------
# grouped_gemm
# ---------------------------------------------------------------------------------------------
def offsets_from_counts(counts):
    return torch.tensor([0] + torch.tensor(counts).cumsum(0).tolist(), dtype=torch.int32)


def check_grouped(qw, x, offsets, dtype):
    W_before = qw.packed.clone()
    x_before = x.clone()
    y = kbit.grouped_gemm(x, qw, offsets)
    assert torch.equal(x, x_before) and torch.equal(qw.packed, W_before)
    ref = R.grouped_gemm(x, ref_dequant(qw), offsets.tolist())
    assert y.dtype == dtype and y.shape == (x.shape[0], qw.out_features)
    assert not torch.isnan(y).any()
    if ref.numel():
        assert rel_err(y, ref) <= GEMM_RTOL[dtype]
    return y


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_grouped_gemm_random_counts(k, dtype, gen):
    E, N, K = 6, 40, 288
    qw = kbit.quantize(make_weight("normal", (E, N, K), gen=gen), k=k)
    counts = torch.randint(0, 9, (E,), generator=gen)
    counts[torch.randint(0, E, (2,), generator=gen)] = 0  # some experts get no tokens
    counts = counts.tolist()
    x = torch.randn(sum(counts), K, generator=gen).to(dtype)
    check_grouped(qw, x, offsets_from_counts(counts), dtype)


@pytest.mark.parametrize("counts", [[5], [0], [0, 0, 0], [0, 13, 0], [13, 0, 0], [0, 0, 13], [1, 1, 1]],
                         ids=str)
def test_grouped_gemm_edge_counts(counts, gen):
    E, N, K = len(counts), 17, 96
    qw = kbit.quantize(make_weight("normal", (E, N, K), gen=gen), k=3)
    x = torch.randn(sum(counts), K, generator=gen).half()
    y = check_grouped(qw, x, offsets_from_counts(counts), torch.float16)
    assert y.shape == (sum(counts), N)


def test_grouped_gemm_matches_per_expert_gemm(gen):
    E, N, K = 4, 33, 544
    W = make_weight("normal", (E, N, K), gen=gen)
    qw = kbit.quantize(W, k=4)
    counts = [3, 0, 7, 2]
    off = offsets_from_counts(counts)
    x = torch.randn(sum(counts), K, generator=gen).bfloat16()
    y = kbit.grouped_gemm(x, qw, off)
    for e in range(E):
        lo, hi = int(off[e]), int(off[e + 1])
        qe = kbit.quantize(W[e], k=4)
        assert torch.equal(y[lo:hi], kbit.gemm(x[lo:hi], qe))


def test_grouped_gemm_deterministic(gen):
    E, N, K = 3, 64, 512
    qw = kbit.quantize(make_weight("normal", (E, N, K), gen=gen), k=2)
    off = offsets_from_counts([10, 20, 5])
    x = torch.randn(35, K, generator=gen).half()
    assert torch.equal(kbit.grouped_gemm(x, qw, off), kbit.grouped_gemm(x, qw, off))
