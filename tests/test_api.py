"""The Python API: kbit.quantize / dequantize / gemm / grouped_gemm / codebook, QuantizedWeight."""
import io
import os

import pytest
import torch

import kbit
import reference as R
from conftest import KS, W_DTYPES, make_weight, random_codebook

STATE_KEYS = {"packed", "absmax", "row_scale", "codebook", "meta"}


def assert_same_qw(a, b):
    assert (a.k, a.shape, a.dtype, a.layout) == (b.k, b.shape, b.dtype, b.layout)
    for name in ("packed", "absmax", "row_scale", "codebook"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert ta.dtype == tb.dtype and torch.equal(ta, tb), name


@pytest.fixture(params=[(37, 320), (3, 17, 96)], ids=["2d", "stack"])
def qw(request, gen):
    return kbit.quantize(make_weight("normal", request.param, torch.bfloat16, gen=gen), k=3)


# ---------------------------------------------------------------------------------------------
# quantize / dequantize
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_returns_quantized_weight(k, dtype, gen):
    W = make_weight("normal", (21, 288), dtype, gen=gen)
    W_before = W.clone()
    qw = kbit.quantize(W, k=k)
    assert torch.equal(W, W_before), "quantize must not modify its input"
    assert isinstance(qw, kbit.QuantizedWeight)
    assert (qw.k, qw.shape, qw.dtype, qw.layout) == (k, (21, 288), dtype, "tiled")
    assert (qw.out_features, qw.in_features, qw.num_experts) == (21, 288, 0)
    assert qw.device == W.device
    assert torch.equal(qw.codebook, kbit.codebook(k))
    flat = kbit.quantize(W, k=k, layout="flat")
    assert flat.layout == "flat"
    p, a, rs = R.quantize(W, kbit.codebook(k), k)
    assert torch.equal(flat.packed, p) and torch.equal(flat.absmax, a) and torch.equal(flat.row_scale, rs)


@pytest.mark.parametrize("layout", ["flat", "tiled"])
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_dequantize_default_and_explicit_dtype(dtype, layout, gen):
    W = make_weight("normal", (2, 19, 96), dtype, gen=gen)
    qw = kbit.quantize(W, k=4, layout=layout)
    flat = qw.to_layout("flat")
    out = kbit.dequantize(qw)
    assert out.dtype == dtype and out.shape == W.shape
    for d in W_DTYPES:
        got = kbit.dequantize(qw, d)
        assert torch.equal(got, R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook, d))


def test_user_codebook_not_modified(gen):
    cb = random_codebook(3, gen)
    cb_before = cb.clone()
    kbit.quantize(make_weight("normal", (8, 64), gen=gen), k=3, codebook=cb)
    assert torch.equal(cb, cb_before)


def test_quantize_codebook_as_list(gen):
    W = make_weight("normal", (8, 64), gen=gen)
    cb = random_codebook(2, gen)
    a = kbit.quantize(W, k=2, codebook=cb.tolist())
    b = kbit.quantize(W, k=2, codebook=cb)
    assert_same_qw(a, b)
    assert torch.equal(a.codebook, cb)


def test_user_codebook_not_aliased(gen):
    cb = random_codebook(3, gen)
    cb_before = cb.clone()
    qw = kbit.quantize(make_weight("normal", (8, 64), gen=gen), k=3, codebook=cb)
    cb.fill_(0.5)
    assert torch.equal(qw.codebook, cb_before), "the QuantizedWeight must own its codebook"


@pytest.mark.parametrize("k", KS)
def test_codebook_function(k):
    cb = kbit.codebook(k)
    assert cb.dtype == torch.float32 and cb.shape == (1 << k,) and cb.device.type == "cpu"
    assert (cb[1:] > cb[:-1]).all() and cb.abs().max() == 1
    assert torch.equal(cb, -cb.flip(0)), "normal-float levels are symmetric"
    cb.zero_()  # a new tensor each call: mutating it changes nothing
    assert torch.equal(kbit.codebook(k), -kbit.codebook(k).flip(0)) and kbit.codebook(k).abs().max() == 1


# ---------------------------------------------------------------------------------------------
# QuantizedWeight
# ---------------------------------------------------------------------------------------------
def test_repr(qw):
    r = repr(qw)
    assert r.startswith("QuantizedWeight(")
    assert f"k={qw.k}" in r and f"shape={qw.shape}" in r and "MiB" in r and "bits/weight" in r
    assert "normal-float" in r and "tiled" in r and "bfloat16" in r


def test_repr_custom_codebook(gen):
    qw = kbit.quantize(make_weight("normal", (4, 32), gen=gen), k=2, codebook=random_codebook(2, gen))
    assert "custom" in repr(qw)


@pytest.mark.parametrize("k", KS)
def test_nbytes_and_bits_per_weight(k, gen):
    N, K = 48, 768  # whole tiles: the tiled layout has no padding
    qw = kbit.quantize(make_weight("normal", (N, K), gen=gen), k=k)
    flat = qw.to_layout("flat")
    want = N * K // 32 * k * 4 + N * K // 32 + N * 4 + (1 << k) * 4
    assert flat.nbytes == want and qw.nbytes == want
    assert flat.bits_per_weight == pytest.approx(8 * want / (N * K))
    assert k + 0.25 < flat.bits_per_weight < k + 0.25 + 0.2
    # with padding the tiled layout is bigger than the flat one
    q2 = kbit.quantize(make_weight("normal", (17, 288), gen=gen), k=k)
    assert q2.nbytes > q2.to_layout("flat").nbytes


def test_to_layout_round_trip(qw):
    assert qw.to_layout("tiled") is qw
    flat = qw.to_layout("flat")
    assert flat.layout == "flat" and flat is not qw
    assert flat.packed.shape == (*qw.shape[:-1], qw.in_features // 32, qw.k)
    back = flat.to_layout("tiled")
    assert_same_qw(back, qw)
    assert qw.layout == "tiled", "to_layout must not change self"
    with pytest.raises(ValueError, match="layout"):
        qw.to_layout("rows")


def test_to_device(qw):
    q2 = qw.to("cpu")
    assert_same_qw(q2, qw)
    assert qw.to(None) is qw
    assert_same_qw(qw.cpu(), qw)


def test_to_meta_keeps_metadata(qw):
    m = qw.to("meta")
    assert m.device.type == "meta" and m.shape == qw.shape and m.packed.shape == qw.packed.shape
    assert qw.device.type == "cpu", "to() returns a new object"


# ---------------------------------------------------------------------------------------------
# serialization
# ---------------------------------------------------------------------------------------------
def test_state_dict_contents(qw):
    sd = qw.state_dict()
    assert set(sd) == STATE_KEYS
    flat = qw.to_layout("flat")
    for key in ("packed", "absmax", "row_scale", "codebook"):
        assert torch.equal(sd[key], getattr(flat, key))
    e = qw.num_experts
    assert sd["meta"].dtype == torch.int64
    assert sd["meta"].tolist() == [kbit.FORMAT_VERSION, qw.k, e, qw.shape[-2], qw.shape[-1], 1]


@pytest.mark.parametrize("layout", ["flat", "tiled"])
def test_state_dict_round_trip(qw, layout):
    q2 = kbit.QuantizedWeight.from_state_dict(qw.state_dict(), layout=layout)
    assert_same_qw(q2, qw.to_layout(layout))
    assert kbit.QuantizedWeight.from_state_dict(qw.state_dict()).layout == "tiled"


@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_state_dict_keeps_dtype(dtype, gen):
    qw = kbit.quantize(make_weight("normal", (5, 64), dtype, gen=gen), k=5)
    q2 = kbit.QuantizedWeight.from_state_dict(qw.state_dict())
    assert q2.dtype == dtype and kbit.dequantize(q2).dtype == dtype
    assert torch.equal(kbit.dequantize(q2), kbit.dequantize(qw))


def test_torch_save_load_weights_only(qw):
    buf = io.BytesIO()
    torch.save({"w": qw, "bias": torch.ones(3)}, buf)
    buf.seek(0)
    obj = torch.load(buf, weights_only=True)
    assert_same_qw(obj["w"], qw)
    buf.seek(0)
    obj = torch.load(buf)  # the default (weights_only=True in torch >= 2.6)
    assert_same_qw(obj["w"], qw)
    flat = qw.to_layout("flat")
    buf = io.BytesIO()
    torch.save(flat, buf)
    buf.seek(0)
    assert_same_qw(torch.load(buf), flat)


def test_state_dict_in_torch_save(qw):
    buf = io.BytesIO()
    torch.save(qw.state_dict(), buf)
    buf.seek(0)
    q2 = kbit.QuantizedWeight.from_state_dict(torch.load(buf, weights_only=True))
    assert_same_qw(q2, qw)


def test_safetensors_round_trip(qw, tmp_path):
    from safetensors.torch import load_file, save_file
    path = os.path.join(tmp_path, "w.safetensors")
    save_file(qw.state_dict(), path)
    sd = load_file(path)
    assert set(sd) == STATE_KEYS
    assert_same_qw(kbit.QuantizedWeight.from_state_dict(sd), qw)


def _corrupt(sd, key, value):
    sd = dict(sd)
    if value is None:
        del sd[key]
    else:
        sd[key] = value
    return sd


def _meta(sd, i, v):
    m = sd["meta"].clone()
    m[i] = v
    return m


CORRUPTIONS = {
    "missing packed": lambda sd: _corrupt(sd, "packed", None),
    "missing meta": lambda sd: _corrupt(sd, "meta", None),
    "missing codebook": lambda sd: _corrupt(sd, "codebook", None),
    "truncated packed": lambda sd: _corrupt(sd, "packed", sd["packed"][..., :-1, :]),
    "packed wrong k": lambda sd: _corrupt(sd, "packed", sd["packed"][..., :-1]),
    "truncated absmax": lambda sd: _corrupt(sd, "absmax", sd["absmax"][..., 1:]),
    "truncated row_scale": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"][..., :-1]),
    "packed int64": lambda sd: _corrupt(sd, "packed", sd["packed"].long()),
    "absmax int32": lambda sd: _corrupt(sd, "absmax", sd["absmax"].int()),
    "row_scale fp64": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"].double()),
    "row_scale not power of two": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"] * 1.5),
    "row_scale zero": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"] * 0),
    "row_scale negative": lambda sd: _corrupt(sd, "row_scale", -sd["row_scale"]),
    "row_scale nan": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"] * float("nan")),
    "row_scale inf": lambda sd: _corrupt(sd, "row_scale", sd["row_scale"] * float("inf")),
    "meta int32": lambda sd: _corrupt(sd, "meta", sd["meta"].int()),
    "meta short": lambda sd: _corrupt(sd, "meta", sd["meta"][:5]),
    "meta version": lambda sd: _corrupt(sd, "meta", _meta(sd, 0, 99)),
    "meta k=6": lambda sd: _corrupt(sd, "meta", _meta(sd, 1, 6)),
    "meta k mismatch": lambda sd: _corrupt(sd, "meta", _meta(sd, 1, 4)),
    "meta E mismatch": lambda sd: _corrupt(sd, "meta", _meta(sd, 2, 7)),
    "meta N mismatch": lambda sd: _corrupt(sd, "meta", _meta(sd, 3, int(sd["meta"][3]) + 1)),
    "meta K mismatch": lambda sd: _corrupt(sd, "meta", _meta(sd, 4, int(sd["meta"][4]) + 32)),
    "meta K not /32": lambda sd: _corrupt(sd, "meta", _meta(sd, 4, int(sd["meta"][4]) + 1)),
    "meta dtype code": lambda sd: _corrupt(sd, "meta", _meta(sd, 5, 7)),
    "meta negative N": lambda sd: _corrupt(sd, "meta", _meta(sd, 3, -1)),
    "codebook unsorted": lambda sd: _corrupt(sd, "codebook", sd["codebook"].flip(0)),
    "codebook too short": lambda sd: _corrupt(sd, "codebook", sd["codebook"][1:]),
    "codebook out of range": lambda sd: _corrupt(sd, "codebook", sd["codebook"] * 2),
    "codebook nan": lambda sd: _corrupt(sd, "codebook", torch.where(
        torch.arange(8) == 3, float("nan"), sd["codebook"])),
    "codebook int": lambda sd: _corrupt(sd, "codebook", torch.arange(8)),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_from_state_dict_rejects_corruption(qw, corruption):
    sd = qw.state_dict()
    bad = CORRUPTIONS[corruption](sd)
    with pytest.raises((ValueError, TypeError)) as info:
        kbit.QuantizedWeight.from_state_dict(bad)
    msg = str(info.value)
    assert msg.startswith("kbit"), msg
    # the message names what is wrong
    key = next((k for k in ("packed", "absmax", "row_scale", "meta", "codebook") if k in corruption),
               None)
    if key in ("packed", "absmax", "row_scale"):
        assert key in msg, msg
    # and the good state dict still loads (the corruption did not touch it)
    kbit.QuantizedWeight.from_state_dict(sd)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_from_state_dict_rejects_codebook_dtype(qw, dtype):
    # format.md: loading checks every dtype: a codebook must not be silently converted
    sd = qw.state_dict()
    with pytest.raises((ValueError, TypeError), match="codebook"):
        kbit.QuantizedWeight.from_state_dict(_corrupt(sd, "codebook", sd["codebook"].to(dtype)))


# ---------------------------------------------------------------------------------------------
# gemm / grouped_gemm API behaviour
# ---------------------------------------------------------------------------------------------
def test_gemm_inputs_not_modified(gen):
    W = make_weight("normal", (40, 256), torch.float16, gen=gen)
    W_before = W.clone()
    qw = kbit.quantize(W, k=4)
    state = {n: getattr(qw, n).clone() for n in ("packed", "absmax", "row_scale", "codebook")}
    x = torch.randn(5, 256, generator=gen).half()
    x_before = x.clone()
    kbit.gemm(x, qw)
    kbit.dequantize(qw)
    assert torch.equal(W, W_before) and torch.equal(x, x_before)
    for n, t in state.items():
        assert torch.equal(getattr(qw, n), t), n


def test_gemm_m0_returns_empty(gen):
    qw = kbit.quantize(make_weight("normal", (40, 256), gen=gen), k=2)
    for shape in [(0, 256), (3, 0, 256)]:
        y = kbit.gemm(torch.empty(shape, dtype=torch.bfloat16), qw)
        assert y.shape == (*shape[:-1], 40) and y.dtype == torch.bfloat16


def test_grouped_gemm_t0_returns_empty(gen):
    qw = kbit.quantize(make_weight("normal", (3, 40, 256), gen=gen), k=2)
    y = kbit.grouped_gemm(torch.empty(0, 256, dtype=torch.half), qw, torch.zeros(4, dtype=torch.int32))
    assert y.shape == (0, 40) and y.dtype == torch.half


def test_gemm_requires_tiled_layout(gen):
    qw = kbit.quantize(make_weight("normal", (16, 64), gen=gen), k=2, layout="flat")
    with pytest.raises(ValueError, match="tiled"):
        kbit.gemm(torch.randn(2, 64).half(), qw)


def test_version_and_exports():
    assert kbit.FORMAT_VERSION == 1
    for name in ("quantize", "dequantize", "gemm", "grouped_gemm", "codebook", "QuantizedWeight"):
        assert hasattr(kbit, name)
    assert isinstance(kbit.cuda_kernels_compiled(), bool)
