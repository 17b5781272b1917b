"""kbit.nn: kbit.Linear, kbit.quantize_model, kbit.Experts (CPU; two GPU-marked tests)."""
import copy
import gc
import weakref
from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

import kbit
import kbit.nn.convert as convert
from conftest import ACT_DTYPES, GEMM_RTOL, randn, saved_and_loaded
from cuda_utils import check_graph_replay

LINEAR_KEYS = {"weight.packed", "weight.absmax", "weight.row_scale", "weight.codebook", "weight.meta"}


def rel_err(got, ref):
    ref = ref.double()
    return ((got.double() - ref).norm() / ref.norm()).item()


def make_linear(K, N, gen, dtype=torch.float32, bias=True):
    lin = nn.Linear(K, N, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(randn((N, K), gen, scale=K ** -0.5))
        if bias:
            lin.bias.copy_(randn((N,), gen))
    return lin.to(dtype)


def linear_reference(layer: kbit.Linear, x):
    """float64 ``x @ dequantize(W)^T + bias``."""
    W_hat = kbit.dequantize(layer.weight.quantized(), torch.float32).double()
    y = x.double() @ W_hat.T
    return y if layer.bias is None else y + layer.bias.double()


def assert_same_buffers(a, b):
    for name in ("packed", "absmax", "row_scale", "codebook"):
        ta, tb = getattr(a, name), getattr(b, name)
        assert ta.dtype == tb.dtype and torch.equal(ta, tb), name
    assert (a.k, a.shape, a.weight_dtype) == (b.k, b.shape, b.weight_dtype)


def assert_same_state(sd_a, sd_b):
    assert sd_a.keys() == sd_b.keys()
    for key in sd_a:
        assert sd_a[key].dtype == sd_b[key].dtype and torch.equal(sd_a[key], sd_b[key]), key


def storages_distinct(sd):
    ptrs = [t.untyped_storage().data_ptr() for t in sd.values()]
    return len(set(ptrs)) == len(ptrs) and all(t.is_contiguous() for t in sd.values())


# ---------------------------------------------------------------------------------------------
# kbit.Linear
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("KN", [(96, 64), (256, 128)], ids=str)
def test_linear_matches_reference(KN, dtype, bias, gen):
    K, N = KN
    lin = make_linear(K, N, gen, dtype, bias)
    layer = kbit.Linear.from_linear(lin, k=4)
    assert (layer.in_features, layer.out_features, layer.k, layer.dtype) == (K, N, 4, dtype)
    assert (layer.bias is not None) == bias and not any(p.requires_grad for p in layer.parameters())
    # the weight is exactly kbit.quantize's
    ref_qw = kbit.quantize(lin.weight.detach(), k=4)
    assert_same_buffers(layer.weight, kbit.nn.QuantizedBuffers.from_quantized(ref_qw))
    x = randn((2, 3, K), gen, dtype)
    y = layer(x)
    assert y.shape == (2, 3, N) and y.dtype == dtype
    assert rel_err(y, linear_reference(layer, x)) <= GEMM_RTOL[dtype]
    if bias:
        assert torch.equal(layer.bias, lin.bias.detach())


def test_linear_from_fp32_source_and_explicit_dtype(gen):
    lin = make_linear(128, 48, gen, torch.float32)
    layer = kbit.Linear.from_linear(lin, k=5)
    # fp32 source: bfloat16 compute by default; quantized from the fp32 weight itself
    assert layer.dtype == torch.bfloat16 and layer.bias.dtype == torch.bfloat16
    assert layer.weight.weight_dtype == torch.float32
    assert torch.equal(layer.weight.packed, kbit.quantize(lin.weight.detach(), k=5).packed)
    x = randn((7, 128), gen, torch.bfloat16)
    assert rel_err(layer(x), linear_reference(layer, x)) <= GEMM_RTOL[torch.bfloat16]

    fp16 = kbit.Linear.from_linear(lin, k=5, dtype=torch.float16)
    assert fp16.dtype == torch.float16 and fp16.bias.dtype == torch.float16
    xh = x.to(torch.float16)
    assert rel_err(fp16(xh), linear_reference(fp16, xh)) <= GEMM_RTOL[torch.float16]
    # quantization error of the layer itself is that of k = 5 (well under 5%)
    assert rel_err(fp16(xh), lin(xh.float())) < 0.06

    cb = torch.linspace(-1, 1, 8)
    custom = kbit.Linear.from_linear(lin, k=3, codebook=cb)
    assert torch.equal(custom.weight.codebook, cb) and custom.k == 3


def test_linear_bad_arguments(gen):
    with pytest.raises(ValueError, match=r"in_features=40 .*\(8, 40\)"):
        kbit.Linear.from_linear(nn.Linear(40, 8))
    assert issubclass(kbit.nn.NotConvertible, ValueError)
    with pytest.raises(ValueError, match=r"\(8, 40\)"):
        kbit.Linear(40, 8)
    with pytest.raises(TypeError, match="float16 or torch.bfloat16"):
        kbit.Linear.from_linear(nn.Linear(64, 8), dtype=torch.float32)
    with pytest.raises(ValueError, match="k must be"):
        kbit.Linear.from_linear(nn.Linear(64, 8), k=6)
    layer = kbit.Linear.from_linear(make_linear(64, 8, gen, torch.float16))
    with pytest.raises(TypeError, match=r"x must be torch.float16.*got torch.float32"):
        layer(randn((2, 64), gen))
    with pytest.raises(TypeError, match="got torch.bfloat16"):
        layer(randn((2, 64), gen, torch.bfloat16))
    with pytest.raises(ValueError, match="K=64"):
        layer(randn((2, 96), gen, torch.float16))


def test_linear_repr(gen):
    layer = kbit.Linear.from_linear(make_linear(256, 64, gen, torch.float16), k=3)
    r = repr(layer)
    assert "\n" not in r and r.startswith("Linear(")
    for part in ("in_features=256", "out_features=64", "bias=True", "k=3", "dtype=float16", " MiB",
                 "bits/weight"):
        assert part in r, (part, r)
    nbytes = layer.weight.nbytes  # tiled layout: 4 row tiles x 1 column tile
    assert nbytes == 4 * 3 * 512 + 4 * 128 + 64 * 4 + 8 * 4
    assert f"{8 * nbytes / (256 * 64):.2f} bits/weight" in r
    assert "bias=False" in repr(kbit.Linear.from_linear(make_linear(64, 8, gen, bias=False)))


def test_linear_to_dtype_and_device(gen):
    lin = make_linear(96, 40, gen, torch.float16)
    layer = kbit.Linear.from_linear(lin)
    before = {k: v.clone() for k, v in layer.state_dict().items()}
    x = randn((3, 96), gen, torch.float16)
    y = layer(x)

    assert layer.to("cpu") is layer and torch.equal(layer(x), y)
    # float32 / float64 casts (model.float()) leave the layer alone: its tensors are never cast
    layer.float()
    layer.to(torch.float64)
    assert layer.dtype == torch.float16 and layer.bias.dtype == torch.float16
    assert_same_state(layer.state_dict(), before)
    assert layer.weight.row_scale.dtype == torch.float32 and layer.weight.codebook.dtype == torch.float32
    assert torch.equal(layer(x), y)

    # .to(bfloat16) = a new compute dtype; the quantized weight is untouched (bit for bit)
    bias_obj = layer.bias
    layer.to(torch.bfloat16)
    assert layer.dtype == torch.bfloat16 and layer.bias.dtype == torch.bfloat16 and layer.bias is bias_obj
    after = layer.state_dict()
    assert_same_state({k: v for k, v in after.items() if k != "bias"},
                      {k: v for k, v in before.items() if k != "bias"})
    direct = kbit.Linear.from_linear(lin, dtype=torch.bfloat16)
    xb = x.to(torch.bfloat16)
    assert torch.equal(layer(xb), direct(xb))
    layer.half()  # the bias went through bfloat16 (cast like any module's), the weight is exact
    assert layer.dtype == torch.float16
    assert torch.equal(layer.bias, lin.bias.detach().to(torch.bfloat16).half())
    assert rel_err(layer(x), y) < 1e-2

    # device moves go through the buffers (meta: shapes only), deepcopy is independent
    y = layer(x)
    meta = copy.deepcopy(layer).to("meta")
    assert all(t.device.type == "meta" for t in list(meta.buffers()) + list(meta.parameters()))
    assert meta.weight.row_scale.dtype == torch.float32
    out = meta(x.to("meta"))
    assert out.shape == (3, 40) and out.device.type == "meta"
    assert layer.weight.device.type == "cpu" and torch.equal(layer(x), y)


def test_linear_state_dict_is_the_flat_format(gen):
    lin = make_linear(96, 40, gen, torch.bfloat16)
    layer = kbit.Linear.from_linear(lin, k=3)
    sd = layer.state_dict()
    assert set(sd) == LINEAR_KEYS | {"bias"}
    flat = kbit.quantize(lin.weight.detach(), k=3).state_dict()  # QuantizedWeight's stable format
    assert_same_state({k[len("weight."):]: v for k, v in sd.items() if k != "bias"}, flat)
    assert sd["weight.packed"].shape == (40, 3, 3)
    assert storages_distinct(sd)


@pytest.mark.parametrize("how", ["torch.save", "safetensors"])
def test_linear_state_dict_round_trip_bit_exact(how, gen, tmp_path):
    layer = kbit.Linear.from_linear(make_linear(256, 72, gen, torch.float16), k=4)
    sd = layer.state_dict()
    loaded = saved_and_loaded(sd, how, tmp_path)
    assert_same_state(loaded, sd)
    # into a layer quantized from a different random linear (and a different k): identical after
    fresh = kbit.Linear.from_linear(make_linear(256, 72, gen, torch.float16), k=2)
    x = randn((5, 256), gen, torch.float16)
    assert not torch.equal(fresh(x), layer(x))
    fresh.load_state_dict(loaded)
    assert fresh.k == 4
    assert_same_buffers(fresh.weight, layer.weight)
    assert torch.equal(fresh.bias, layer.bias)
    assert torch.equal(fresh(x), layer(x))
    assert_same_state(fresh.state_dict(), sd)
    # into an all-zero placeholder
    empty = kbit.Linear(256, 72, bias=True, k=4, dtype=torch.float16)
    assert torch.equal(empty(x), torch.zeros(5, 72, dtype=torch.float16))
    empty.load_state_dict(loaded)
    assert torch.equal(empty(x), layer(x))


def test_linear_load_state_dict_errors(gen):
    layer = kbit.Linear.from_linear(make_linear(64, 16, gen, torch.float16))
    sd = layer.state_dict()
    other = kbit.Linear(96, 16, dtype=torch.float16)
    with pytest.raises(RuntimeError, match=r"size mismatch for weight.*\(16, 64\).*\(16, 96\)"):
        other.load_state_dict(sd)
    fresh = kbit.Linear(64, 16, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="Missing key.*weight.meta"):
        fresh.load_state_dict({k: v for k, v in sd.items() if k != "weight.meta"})
    with pytest.raises(RuntimeError, match="Unexpected key.*weight.extra"):
        fresh.load_state_dict({**sd, "weight.extra": torch.zeros(1)})
    bad = dict(sd, **{"weight.row_scale": sd["weight.row_scale"] * 3})
    with pytest.raises(RuntimeError, match="powers of two"):
        fresh.load_state_dict(bad)
    bad = dict(sd, **{"weight.absmax": sd["weight.absmax"][:-1]})
    with pytest.raises(RuntimeError, match="truncated or corrupted"):
        fresh.load_state_dict(bad)
    # non-strict: the weight stays as it was when incomplete, and the keys are reported
    fresh = kbit.Linear(64, 16, dtype=torch.float16)
    res = fresh.load_state_dict({k: v for k, v in sd.items() if k != "weight.codebook"}, strict=False)
    assert res.missing_keys == ["weight.codebook"]
    assert torch.equal(fresh.weight.absmax, torch.zeros_like(fresh.weight.absmax))


# ---------------------------------------------------------------------------------------------
# kbit.quantize_model
# ---------------------------------------------------------------------------------------------
class Toy(nn.Module):
    """mlp.0 and mlp.2 and proj convertible; odd has K = 40; head is skipped by name."""

    def __init__(self, gen):
        super().__init__()
        self.mlp = nn.Sequential(make_linear(256, 128, gen), nn.ReLU(), make_linear(128, 256, gen), nn.ReLU())
        self.proj = make_linear(256, 40, gen)
        self.odd = make_linear(40, 64, gen)
        self.head = make_linear(64, 10, gen)

    def forward(self, x):
        return self.head(self.odd(F.relu(self.proj(self.mlp(x)))))


def module_bytes(m):
    return sum(t.numel() * t.element_size() for t in list(m.parameters()) + list(m.buffers()))


def test_quantize_model_toy(gen):
    model = Toy(gen).to(torch.bfloat16)
    fp = copy.deepcopy(model)
    names = ["mlp.0", "mlp.2", "proj"]
    before = sum(module_bytes(model.get_submodule(n)) for n in names)
    summary = kbit.quantize_model(model, k=4, skip=["head"], progress=False)

    for n in names:
        m = model.get_submodule(n)
        assert type(m) is kbit.Linear and m.k == 4 and m.dtype == torch.bfloat16, n
    assert type(model.odd) is nn.Linear and type(model.head) is nn.Linear
    assert torch.equal(model.head.weight, fp.head.weight)
    assert summary.converted == names
    assert set(summary.skipped) == {"odd", "head"}
    assert "in_features=40" in summary.skipped["odd"] and "32" in summary.skipped["odd"]
    assert "'head'" in summary.skipped["head"]
    assert summary.bytes_before == before == (256 * 128 + 128 + 128 * 256 + 256 + 256 * 40 + 40) * 2
    assert summary.bytes_after == sum(module_bytes(model.get_submodule(n)) for n in names)
    assert summary.bytes_saved == summary.bytes_before - summary.bytes_after > 0.5 * summary.bytes_before
    text = str(summary)
    assert "converted 3 modules to k=4, skipped 2" in text and "saved" in text and "odd" in text

    x = randn((6, 256), gen, torch.bfloat16)
    ref = fp(x)
    y = model(x)
    assert y.shape == ref.shape and y.dtype == torch.bfloat16
    for n in names:  # each layer on its own: the error of 4-bit quantization (about 10%)
        q, f = model.get_submodule(n), fp.get_submodule(n)
        xi = randn((8, f.in_features), gen, torch.bfloat16)
        assert 0.02 < rel_err(q(xi), f(xi)) < 0.15, n
    assert 0.02 < rel_err(y, ref) < 0.15  # three quantized layers in a row


def test_quantize_model_fp32_model_to_fp16(gen):
    model = nn.Sequential(make_linear(128, 256, gen), nn.GELU(), make_linear(256, 64, gen))
    fp = copy.deepcopy(model)
    summary = kbit.quantize_model(model, k=5, dtype=torch.float16, progress=False)
    assert summary.converted == ["0", "2"] and summary.skipped == {}
    assert all(m.dtype == torch.float16 for m in (model[0], model[2]))
    x = randn((4, 128), gen)
    assert rel_err(model(x.half()), fp(x)) < 0.08  # k = 5


def test_quantize_model_skip_semantics(gen):
    def build():
        root = nn.Module()
        root.layers = nn.ModuleList()
        for _ in range(2):
            blk = nn.Module()
            blk.q_proj, blk.down_proj = make_linear(64, 32, gen), make_linear(32, 64, gen)
            root.layers.append(blk)
        root.lm_head = make_linear(64, 16, gen)
        return root

    def converted(skip):
        model = build()
        return kbit.quantize_model(model, skip=skip, progress=False).converted

    every = ["layers.0.q_proj", "layers.0.down_proj", "layers.1.q_proj", "layers.1.down_proj", "lm_head"]
    assert converted(None) == every
    assert converted("lm_head") == every[:4]                      # whole name
    assert converted(["down_proj"]) == every[0:1] + every[2:3] + every[4:]   # dotted suffix
    assert converted(["layers.0.*"]) == every[2:]                  # fnmatch
    assert converted(["proj"]) == every                            # not a substring match
    assert converted(["*proj"]) == ["lm_head"]
    assert converted(("layers.1.q_proj", "lm_head")) == every[:2] + every[3:4]
    assert converted(lambda name: name.endswith("q_proj")) == [every[1], every[3], every[4]]
    with pytest.raises(TypeError, match="skip must be"):
        kbit.quantize_model(build(), skip=[3], progress=False)


def test_quantize_model_frees_each_fp_layer_before_the_next(gen, monkeypatch):
    model = nn.Sequential(*[make_linear(64, 64, gen) for _ in range(4)])
    refs = [weakref.ref(m) for m in model]
    seen = []

    def spy(module, **kw):
        gc.collect()
        seen.append([r() is None for r in refs])
        return kbit.Linear.from_linear(module, **kw)

    monkeypatch.setitem(convert._CONVERTERS, nn.Linear, spy)
    kbit.quantize_model(model, progress=False)
    # when layer i is quantized, layers 0..i-1 are already gone: extra memory ~ one layer
    assert seen == [[j < i for j in range(4)] for i in range(4)]
    gc.collect()
    assert all(r() is None for r in refs)


def test_quantize_model_shared_subclass_root_and_registry(gen):
    shared = make_linear(64, 64, gen)
    model = nn.Module()
    model.a, model.b = shared, shared                             # one module, two slots
    model.mha = nn.MultiheadAttention(64, 4)                      # out_proj: an nn.Linear subclass
    summary = kbit.quantize_model(model, progress=False)
    assert type(model.a) is kbit.Linear and model.a is model.b
    assert summary.converted == ["a"] and summary.bytes_before == 64 * 64 * 4 + 64 * 4
    assert "subclass of nn.Linear" in summary.skipped["mha.out_proj"]
    x = randn((2, 3, 64), gen)
    assert model.mha(x, x, x)[0].shape == (2, 3, 64)             # still works, untouched

    with pytest.raises(TypeError, match="cannot be replaced in place"):
        kbit.quantize_model(make_linear(64, 8, gen), progress=False)

    class MyExperts(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up_proj = nn.Parameter(randn((4, 64, 32), gen, scale=0.2))
            self.down_proj = nn.Parameter(randn((4, 32, 32), gen, scale=0.2))

    def to_kbit(m, k, codebook, dtype):
        return kbit.Experts.from_weights(m.gate_up_proj, m.down_proj, k=k, codebook=codebook, dtype=dtype)

    holder = nn.Module()
    holder.experts = MyExperts()
    kbit.nn.register_converter(MyExperts, to_kbit)
    try:
        summary = kbit.quantize_model(holder, k=3, progress=False)
    finally:
        kbit.nn.register_converter(MyExperts, None)
    assert type(holder.experts) is kbit.Experts and holder.experts.k == 3 and summary.converted == ["experts"]
    assert MyExperts not in convert._CONVERTERS


def test_quantize_model_progress_bar(gen, capsys):
    model = nn.Sequential(make_linear(64, 32, gen), make_linear(32, 8, gen))
    kbit.quantize_model(model, progress=True)
    err = capsys.readouterr().err
    assert "kbit.quantize_model" in err and "2/2" in err
    model = nn.Sequential(make_linear(64, 32, gen))
    kbit.quantize_model(model, progress=False)
    assert capsys.readouterr().err == ""


def test_quantized_model_safetensors_into_fresh_model(gen, tmp_path):
    model = Toy(gen).to(torch.float16)
    kbit.quantize_model(model, k=3, skip="head", progress=False)
    sd = model.state_dict()
    assert {"mlp.0.weight.meta", "proj.weight.packed", "odd.weight", "head.bias"} <= set(sd)
    assert storages_distinct(sd)
    save_file(sd, str(tmp_path / "model.safetensors"))

    fresh = Toy(gen).to(torch.float16)  # different random weights, same structure
    kbit.quantize_model(fresh, k=3, skip="head", progress=False)
    x = randn((4, 256), gen, torch.float16)
    assert not torch.equal(fresh(x), model(x))
    fresh.load_state_dict(load_file(str(tmp_path / "model.safetensors")))
    assert torch.equal(fresh(x), model(x))
    assert_same_state(fresh.state_dict(), sd)


# ---------------------------------------------------------------------------------------------
# kbit.Experts
# ---------------------------------------------------------------------------------------------
E, H, I, TOPK = 8, 64, 96, 2
EMPTY_EXPERT = 3


def expert_weights(gen, dtype=torch.float32):
    return randn((E, 2 * I, H), gen, dtype, scale=H ** -0.5), randn((E, H, I), gen, dtype, scale=I ** -0.5)


def routing(T, gen, empty=EMPTY_EXPERT):
    """Distinct experts per token, never ``empty``; positive weights."""
    ids = torch.stack([torch.randperm(E - 1, generator=gen)[:TOPK] for _ in range(T)])
    ids = ids + (ids >= empty).long()
    w = torch.rand(T, TOPK, generator=gen) + 0.1
    return ids, w / w.sum(-1, keepdim=True)


def moe_reference(m: kbit.Experts, x, ids, w):
    """float64, token by token, from the dequantized weights (m on any device; x, ids, w on the CPU); ids outside
    [0, m.num_experts) dropped."""
    gu = kbit.dequantize(m.gate_up_proj.quantized(), torch.float32).double().cpu()
    dn = kbit.dequantize(m.down_proj.quantized(), torch.float32).double().cpu()
    out = torch.zeros(x.shape[0], H, dtype=torch.float64)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            if 0 <= e < m.num_experts:
                h = gu[e] @ x[t].double()
                out[t] += float(w[t, j]) * (dn[e] @ (F.silu(h[:I]) * h[I:]))
    return out


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_experts_match_reference(dtype, gen):
    gate_up, down = expert_weights(gen, dtype)
    m = kbit.Experts.from_weights(gate_up, down, k=4)
    assert (m.num_experts, m.hidden_size, m.intermediate_size, m.k, m.dtype) == (E, H, I, 4, dtype)
    assert torch.equal(m.gate_up_proj.quantized().packed, kbit.quantize(gate_up, k=4).packed)
    T = 13
    x = randn((T, H), gen, dtype)
    ids, w = routing(T, gen)
    assert not (ids == EMPTY_EXPERT).any()  # an expert with no tokens
    y = m(x, ids, w)
    assert y.shape == (T, H) and y.dtype == dtype
    ref = moe_reference(m, x, ids, w)
    assert rel_err(y, ref) <= 2 * GEMM_RTOL[dtype]
    # a leading batch dim and int32 ids give the same result
    y3 = m(x.view(1, T, H), ids.int().view(1, T, TOPK), w.view(1, T, TOPK))
    assert torch.equal(y3.view(T, H), y)
    # and it is the quantization of the fp experts (gate = rows 0:I of gate_up, as in HF)
    fp = torch.stack([(down[e].float() @ (F.silu(gate_up[e, :I].float() @ x.float().T)
                                          * (gate_up[e, I:].float() @ x.float().T))).T for e in range(E)])
    fp_out = (fp[ids, torch.arange(T)[:, None]] * w[..., None]).sum(1)
    assert rel_err(y, fp_out) < 0.25  # two 4-bit matmuls


def test_experts_dropped_ids_empty_and_one_token(gen):
    m = kbit.Experts.from_weights(*expert_weights(gen), k=3, dtype=torch.float16)
    T = 6
    x = randn((T, H), gen, torch.float16)
    ids, w = routing(T, gen)
    ids[1, 0] = E            # HF's "not on this rank"
    ids[2, 1] = -1
    ids[4] = E               # token 4 routed nowhere
    w[4] = float("nan")      # and its weights are never read
    y = m(x, ids, w)
    assert torch.equal(y[4], torch.zeros(H, dtype=torch.float16))
    assert rel_err(y, moe_reference(m, x, ids, w.nan_to_num(0.0))) <= 2 * GEMM_RTOL[torch.float16]
    y0 = m(x[:0], ids[:0], w[:0])
    assert y0.shape == (0, H) and y0.dtype == torch.float16
    y1 = m(x[:1], ids[:1], w[:1])
    assert torch.equal(y1, m(x, ids, w)[:1])


def test_experts_bad_arguments(gen):
    gate_up, down = expert_weights(gen)
    with pytest.raises(ValueError, match=r"gate_up_proj \[E, 2I, H\]"):
        kbit.Experts.from_weights(gate_up, down[:, :, :64])
    with pytest.raises(ValueError, match="multiples of 32"):
        kbit.Experts.from_weights(gate_up[:, :80], down[:, :, :40])
    with pytest.raises(ValueError, match="activation"):
        kbit.Experts.from_weights(gate_up, down, activation="gelu")
    m = kbit.Experts.from_weights(gate_up, down, dtype=torch.float16)
    ids, w = routing(3, gen)
    with pytest.raises(TypeError, match="float16"):
        m(randn((3, H), gen, torch.bfloat16), ids, w)
    with pytest.raises(ValueError, match="top_k_index"):
        m(randn((3, H), gen, torch.float16), ids[:2], w[:2])
    with pytest.raises(TypeError, match="integer"):
        m(randn((3, H), gen, torch.float16), ids.float(), w)


def test_experts_state_dict_round_trip_and_to(gen, tmp_path):
    m = kbit.Experts.from_weights(*expert_weights(gen), k=4, dtype=torch.bfloat16)
    sd = m.state_dict()
    assert set(sd) == {f"{p}.{k}" for p in ("gate_up_proj", "down_proj")
                       for k in ("packed", "absmax", "row_scale", "codebook", "meta")}
    assert sd["gate_up_proj.meta"].tolist() == [kbit.FORMAT_VERSION, 4, E, 2 * I, H, 2]
    assert storages_distinct(sd)
    save_file(sd, str(tmp_path / "experts.safetensors"))
    fresh = kbit.Experts(E, H, I, k=2, dtype=torch.bfloat16)
    fresh.load_state_dict(load_file(str(tmp_path / "experts.safetensors")))
    assert_same_state(fresh.state_dict(), sd)
    x = randn((5, H), gen, torch.bfloat16)
    ids, w = routing(5, gen)
    y = m(x, ids, w)
    assert torch.equal(fresh(x, ids, w), y)
    assert "num_experts=8" in repr(m) and "k=4" in repr(m)
    fresh.half()
    assert fresh.dtype == torch.float16 and fresh.gate_up_proj.row_scale.dtype == torch.float32
    assert rel_err(fresh(x.half(), ids, w), y) < 2e-2


def test_experts_gate_up_rows_interleaved_in_memory_natural_in_state_dict(gen):
    # The gate/up buffers hold rows interleaved in 8s (each 16: 8 outputs' gate rows, then their up rows) for
    # kbit::grouped_gemm_silu_and_mul; quantized() and the state dict are the natural order, the same tensors as
    # kbit.quantize's (checkpoints of earlier versions load unchanged).
    gate_up, down = expert_weights(gen)
    m = kbit.Experts.from_weights(gate_up, down, k=4)
    want = kbit.quantize(gate_up, k=4).state_dict()
    sd = m.state_dict()
    for key in ("packed", "absmax", "row_scale", "codebook", "meta"):
        assert torch.equal(sd[f"gate_up_proj.{key}"], want[key]), key
    natural = kbit.dequantize(m.gate_up_proj.quantized(), torch.float32)
    interleaved = kbit.dequantize(m.gate_up_proj.interleaved(), torch.float32)
    assert m.gate_up_proj.interleaved().packed.data_ptr() == m.gate_up_proj.packed.data_ptr()
    for t in range(I // 8):
        assert torch.equal(interleaved[:, 16 * t:16 * t + 8], natural[:, 8 * t:8 * t + 8])
        assert torch.equal(interleaved[:, 16 * t + 8:16 * t + 16], natural[:, I + 8 * t:I + 8 * t + 8])
    with pytest.raises(ValueError, match="multiples of 32"):
        kbit.Experts(4, 64, 40)


def test_experts_forward_reads_no_tensor_on_host(gen, monkeypatch):
    """On the meta device a tensor has no data: any host read (.item(), .tolist(), bool(),
    nonzero, bincount, ...) raises. The forward must run there end to end."""
    m = kbit.Experts.from_weights(*expert_weights(gen), k=4, dtype=torch.float16).to("meta")
    x = torch.empty(9, H, dtype=torch.float16, device="meta")
    ids = torch.empty(9, TOPK, dtype=torch.int64, device="meta")
    w = torch.empty(9, TOPK, device="meta")
    y = m(x, ids, w)
    assert y.shape == (9, H) and y.device.type == "meta"
    # the check has teeth: the same forward with one host read fails
    real = kbit.api.grouped_gemm

    def reads_host(x, qw, offsets):
        int(offsets[-1])
        return real(x, qw, offsets)

    monkeypatch.setattr(kbit.api, "grouped_gemm", reads_host)
    with pytest.raises(RuntimeError, match="meta"):
        m(x, ids, w)


# ---------------------------------------------------------------------------------------------
# GPU (skipped without CUDA)
# ---------------------------------------------------------------------------------------------
def _cuda_experts(gen):
    m = kbit.Experts.from_weights(*expert_weights(gen), k=4, dtype=torch.float16).cuda()
    T = 16
    x = randn((T, H), gen, torch.float16).cuda()
    ids, w = routing(T, gen)
    return m, x, ids.cuda(), w.cuda()


@pytest.mark.gpu
def test_experts_module_ops_sync_free_and_capturable_cuda(gen, monkeypatch):
    """The module's own ops (sort, offsets, gathers, the gate/up call with its activation, weighted sum) neither
    sync nor break CUDA graph capture, checked apart from the down call's grouped kernel: kbit.grouped_gemm is
    replaced by a device-only dense stand-in (the real op: test_experts_forward_sync_free_cuda)."""
    m, x, ids, w = _cuda_experts(gen)
    dense = {m.down_proj.packed.data_ptr(): kbit.dequantize(m.down_proj.quantized(), torch.float32)}

    def device_grouped_gemm(xs, qw, offsets):  # same contract as the op: fp32 accumulation
        rows = torch.arange(xs.shape[0], device=xs.device)
        e = torch.searchsorted(offsets[1:], rows, right=True)  # expert of each row
        W = dense[qw.packed.data_ptr()][e]                     # [P, N, K]
        return torch.bmm(W, xs.float().unsqueeze(2)).squeeze(2).to(xs.dtype)

    monkeypatch.setattr(kbit.api, "grouped_gemm", device_grouped_gemm)
    expected = m(x, ids, w)
    ref = moe_reference(copy.deepcopy(m).cpu(), x.cpu(), ids.cpu(), w.cpu())
    assert rel_err(expected.cpu(), ref) <= 2 * GEMM_RTOL[torch.float16]
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        y = m(x, ids, w)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert torch.equal(y, expected)

    sx, sids, sw = x.clone(), ids.clone(), w.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        m(sx, sids, sw)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = m(sx, sids, sw)
    x2 = randn((16, H), gen, torch.float16).cuda()
    ids2, w2 = routing(16, gen, empty=0)
    sx.copy_(x2), sids.copy_(ids2), sw.copy_(w2)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.allclose(out, m(x2, ids2.cuda(), w2.cuda()), rtol=1e-3, atol=1e-3)


def assert_no_host_sync(module, *args):
    """module(*args) after a warm-up call runs without a host sync (torch's sync debug mode raises on one)."""
    module(*args)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        module(*args)
    finally:
        torch.cuda.set_sync_debug_mode(0)


@pytest.mark.gpu
def test_experts_forward_sync_free_cuda(gen):
    """The whole Experts forward, grouped kernels included, runs without a host sync and
    replays from a CUDA graph with the same bits as eager calls."""
    m, x, ids, w = _cuda_experts(gen)
    assert_no_host_sync(m, x, ids, w)
    x2, (ids2, w2) = randn(tuple(x.shape), gen, torch.float16).cuda(), routing(x.shape[0], gen)
    check_graph_replay(m, [x.clone(), ids.clone(), w.clone()], [x2, ids2.cuda(), w2.cuda()])


def test_experts_slot_path_rule(gen):
    """slot_path's rule, with no GPU: CUDA only; at most SLOT_MAX_PAIRS pairs and SLOT_MAX_EXPERTS experts; one token,
    or at least SLOT_MIN_EXPERTS_PER_PAIR experts a pair."""
    m = kbit.Experts.from_weights(*expert_weights(gen, torch.float16), k=4)  # 8 experts
    cuda = torch.device("cuda")
    assert m.slot_path(1, 8, cuda) and not m.slot_path(1, 8, torch.device("cpu"))
    assert not m.slot_path(1, 33, cuda) and not m.slot_path(0, 8, cuda)
    assert m.num_experts == 8 and m.slot_path(2, 1, cuda) and not m.slot_path(3, 1, cuda)  # (8 >= 4 x 2, 8 < 4 x 3)
    few = copy.copy(m)
    few.SLOT_MAX_EXPERTS = m.num_experts - 1  # (past the kernel's stacked experts: routed)
    assert not few.slot_path(1, 8, cuda)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_experts_slot_path_cuda(dtype, gen, poisoned_cuda):
    """At decode (one token's pairs; a few tokens over many experts) the forward takes kbit::grouped_gemm_slots (no
    routing, three kernels): against the float64 reference within the GEMM bound, ids outside [0, E) dropped, close
    to the routed form (slot_path off), without a host sync, and replayed from a CUDA graph with the eager bits."""
    many = 64  # experts: 4 tokens x top-2 are 8 pairs, at least 4 experts a pair
    gate_up = randn((many, 2 * I, H), gen, dtype, scale=H ** -0.5)
    down = randn((many, H, I), gen, dtype, scale=I ** -0.5)
    m8 = kbit.Experts.from_weights(*expert_weights(gen, dtype), k=4).cuda()
    m64 = kbit.Experts.from_weights(gate_up, down, k=3).cuda()
    for m, T in ((m8, 1), (m64, 1), (m64, 4)):
        assert m.slot_path(T, TOPK, torch.device("cuda"))
        x = randn((T, H), gen, dtype).cuda()
        ids = torch.stack([torch.randperm(m.num_experts, generator=gen)[:TOPK] for _ in range(T)])
        w = torch.rand(T, TOPK, generator=gen) + 0.1
        if T > 1:
            ids[1, 0] = m.num_experts  # HF's "not on this rank"
            ids[2, 1] = -1
        y = m(x, ids.cuda(), w.cuda())
        assert y.shape == (T, H) and y.dtype == dtype and not y.isnan().any()
        ref = moe_reference(m, x.cpu(), ids, w)
        assert rel_err(y.cpu(), ref) <= 2 * GEMM_RTOL[dtype], (m.num_experts, T)
        routed = copy.copy(m)
        routed.SLOT_MAX_PAIRS = 0  # (the routed form: four kernels)
        assert not routed.slot_path(T, TOPK, torch.device("cuda"))
        assert rel_err(y.cpu(), routed(x, ids.cuda(), w.cuda()).cpu()) <= 2 * GEMM_RTOL[dtype]
    assert not m8.slot_path(4, TOPK, torch.device("cuda"))  # 8 pairs over 8 experts: routed
    assert not m64.slot_path(17, TOPK, torch.device("cuda")) and not m64.slot_path(1, 33, torch.device("cuda"))
    x, ids = randn((1, H), gen, dtype).cuda(), torch.randperm(64, generator=gen)[:TOPK].view(1, TOPK).cuda()
    w = torch.rand(1, TOPK, generator=gen).cuda()
    assert_no_host_sync(m64, x, ids, w)
    x2, ids2 = randn((1, H), gen, dtype).cuda(), torch.randperm(64, generator=gen)[:TOPK].view(1, TOPK).cuda()
    check_graph_replay(m64, [x.clone(), ids.clone(), w.clone()], [x2, ids2, torch.rand(1, TOPK).cuda()])


@pytest.mark.gpu
def test_quantize_model_extra_memory_is_at_most_one_layer():
    # issue 3: quantizing layer by layer needs at most one layer's fp16 copy of extra memory
    layers = [nn.Linear(4096, 11008, bias=False, dtype=torch.float16, device="cuda") for _ in range(6)]
    model = nn.Sequential(*layers)
    del layers
    layer_bytes = 4096 * 11008 * 2
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    summary = kbit.quantize_model(model, k=4, progress=False)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    assert len(summary.converted) == 6
    assert extra <= layer_bytes, (extra, layer_bytes)
    freed = before - torch.cuda.memory_allocated()
    assert freed >= 0.7 * 6 * layer_bytes, (freed, layer_bytes)  # the fp16 weights are gone (k=4 keeps ~27%)
