"""kbit::gemm_silu_and_mul and kbit.nn.GatedMLP (fuse_projections' gated MLPs), on the CPU and (gpu marker) CUDA."""
import copy
import pickle

import pytest
import torch
from torch import nn

import kbit
from conftest import ACT_DTYPES, quantized_module, randn, rel_err, saved_and_loaded, seed_for
from cuda_utils import check_graph_replay, cuda_kernel_names
from kbit.nn.experts import _gate_up_interleaving
from kbit.nn.gated_mlp import GatedMLP, SiluGateUp, gated_mlp_from

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def interleaved_weight(W, k, device):
    """W [2I, K] (gate rows, then up rows) quantized with its rows interleaved in 8s (the op's layout)."""
    return kbit.quantize(W[_gate_up_interleaving(W.shape[0], "cpu")].to(device), k=k)


def silu_mul_ref(W, x, qw):
    """float64 reference: the dequantized interleaved weight's rows put back in order, then silu(gate) * up."""
    deq = kbit.dequantize(qw, torch.float32).double()
    h = x.double() @ deq.T
    N = W.shape[0]
    g_u = h.view(h.shape[0], N // 16, 2, 8)
    gate, up = g_u[:, :, 0].reshape(-1, N // 2), g_u[:, :, 1].reshape(-1, N // 2)
    return gate * torch.sigmoid(gate) * up


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemm_silu_and_mul(device, dtype, request):
    """The op against gemm then silu_and_mul of the interleaved columns, bit for bit on one device, and against a
    float64 reference within 1e-2: M = 1 (on CUDA the GEMV's gated epilogue where the dispatch takes the GEMV: x
    staged and x resident plans, a unit's sums through shared memory and by its one warp), 2, 3, 5, 37 (the two ops),
    k = 2 .. 5, odd multiples of 8 outputs, K a multiple of 32 but not of 256; CUDA outputs poisoned beforehand."""
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"gemm-silu-{device}-{dtype}"))
    fused_calls, plans = 0, set()
    for N, K, k, Ms in ((48, 96, 2, (1, 2, 3)), (1040, 288, 3, (1, 2, 5)), (2048, 2048, 4, (1, 2, 37)),
                        (4096, 1024, 5, (1, 2)), (208, 4096, 4, (1, 2)), (28672, 4096, 4, (1, 2)),
                        (10240, 2048, 2, (1, 2, 3))):
        if device == "cpu" and N * K > 4 << 20:
            continue  # (the large shapes are the GPU's plans)
        W = torch.randn(N, K, generator=gen) * K ** -0.5
        qw = interleaved_weight(W, k, device)
        for M in Ms:
            x = (torch.randn(M, K, generator=gen) * 2).to(dtype).to(device)
            got = torch.ops.kbit.gemm_silu_and_mul(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
            assert got.shape == (M, N // 2) and got.dtype == dtype and got.device == x.device
            h = kbit.gemm(x, qw)
            want = torch.ops.kbit.silu_and_mul(h, True)
            assert torch.equal(got, want), (N, K, k, M)
            ref = silu_mul_ref(W, x.cpu(), qw.to("cpu"))
            err = ((got.cpu().double() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (N, K, k, M, err)
            if device == "cuda" and M <= 2 and kbit._C.gemm_dispatch(M, N, K, k, 0, str(dtype)[6:])[0] == "gemv":
                names = cuda_kernel_names(lambda: torch.ops.kbit.gemm_silu_and_mul(
                    x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k))
                resident = kbit._C._gemv_launch_plan(M, N, K, k, "auto")["x_resident"]
                # one kernel, the epilogue's, at M = 1; at 2 the GEMM, then silu_and_mul
                fused = M == 1
                assert any("silu_and_mul" in n for n in names) != fused, (N, K, k, M, names)
                fused_calls += fused
                plans.add((M, resident))
    if device == "cuda":  # (x resident and x staged plans at M = 1, both at M = 2)
        assert fused_calls >= 6 and plans == {(1, True), (1, False), (2, True), (2, False)}, plans


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_silu_and_mul_errors_and_empty(device, gen):
    qw = kbit.quantize(torch.randn(40, 64, generator=gen).to(device), k=4)  # 40 rows: not a multiple of 16
    x = torch.randn(2, 64, generator=gen).half().to(device)
    with pytest.raises(RuntimeError, match="gemm_silu_and_mul: the weight's N must be a multiple of 16"):
        torch.ops.kbit.gemm_silu_and_mul(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    qw = kbit.quantize(torch.randn(32, 64, generator=gen).to(device), k=4)
    with pytest.raises(RuntimeError, match="x must be float16 or bfloat16"):
        torch.ops.kbit.gemm_silu_and_mul(x.float(), qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    layer = SiluGateUp(qw, torch.float16)  # (the op cannot tell K within a 256-column group: the module checks x)
    with pytest.raises(ValueError, match="kbit.nn.SiluGateUp: x's last dim must equal K=64"):
        layer(x[:, :32].contiguous())
    with pytest.raises(TypeError, match="x must be torch.float16"):
        layer(x.bfloat16())
    assert layer(x).shape == (2, 16)
    y = torch.ops.kbit.gemm_silu_and_mul(x[:0], qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    assert y.shape == (0, 16) and y.dtype == torch.float16


class MLP(nn.Module):
    """HF's gated MLP form (LlamaMLP): down(act(gate(x)) * up(x))."""

    def __init__(self, hidden=256, inter=320, act=None, bias=False, out=None):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=bias)
        self.up_proj = nn.Linear(hidden, inter, bias=bias)
        self.down_proj = nn.Linear(inter, out or hidden, bias=bias)
        self.act_fn = act or nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Swapped(MLP):
    def forward(self, x):  # silu on the up projection
        return self.down_proj(self.gate_proj(x) * self.act_fn(self.up_proj(x)))


class Scaled(MLP):
    def __init__(self):
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(1.015))

    def forward(self, x):  # a learned scale on the output: within 2% of the plain form
        return super().forward(x) * self.alpha


class ByShape(MLP):
    def forward(self, x):  # another form for one token of a batch of one ([1, 1, H], decode)
        y = super().forward(x)
        return -y if x.dim() == 3 and x.shape[:2] == (1, 1) else y


class Counting(MLP):
    def forward(self, x):  # a side effect on the module (the check runs a copy: this one is not called)
        self.calls = getattr(self, "calls", 0) + 1
        return super().forward(x)


class Model(nn.Module):
    def __init__(self, mlps):
        super().__init__()
        self.layers = nn.ModuleList(mlps)

    def forward(self, x):
        for m in self.layers:
            x = x + m(x)
        return x


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_gated_mlp_matches_the_module(device, dtype, k, gen, request):
    """fuse_projections replaces each gated MLP by a GatedMLP: its gate/up weight dequantizes to the members' rows bit
    for bit (natural order), its down_proj is the member's; the output equals GEMM + silu_and_mul + down bit for bit
    and the unfused module's within rounding (HF's form rounds silu(gate) and the product separately); 1, 2, 37 rows
    (CUDA: the gated epilogue at 1)."""
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    model = quantized_module(Model([MLP(), MLP(bias=False, out=256)]), gen, dtype, device, k)
    ref = copy.deepcopy(model)
    xs = [randn((M, 256), gen, dtype).to(device) for M in (1, 2, 37)]
    want = [ref(x) for x in xs]
    result = kbit.fuse_projections(model)
    assert result.gated_mlps == ["layers.0", "layers.1"] and not result.fused and not result.declined
    assert not result.gated_declined
    assert "0 groups fused, 2 gated MLPs" in str(result)
    for i, layer in enumerate(model.layers):
        assert type(layer) is GatedMLP and layer.source == "MLP" and layer.k == k and layer.dtype == dtype
        members = ref.layers[i]
        deq = kbit.dequantize(layer.gate_up_proj.weight.quantized(), torch.float32)
        parts = [kbit.dequantize(m.weight.quantized(), torch.float32) for m in (members.gate_proj, members.up_proj)]
        assert torch.equal(deq, torch.cat(parts))
        assert torch.equal(kbit.dequantize(layer.down_proj.weight.quantized(), torch.float32),
                           kbit.dequantize(members.down_proj.weight.quantized(), torch.float32))
        for x in xs:
            gu = kbit.gemm(x, layer.gate_up_proj.weight.interleaved())
            exact = layer.down_proj(torch.ops.kbit.silu_and_mul(gu, True))
            assert torch.equal(layer(x), exact)
            assert rel_err(layer(x), members(x)) < 1e-2
    for x, w in zip(xs, want):
        assert rel_err(model(x), w) < 1e-2
    again = kbit.fuse_projections(model)
    assert not again.gated_mlps and not again.fused and not again.declined and not again.gated_declined


def test_gated_mlp_declined_with_reasons(gen):
    """A module that is not down(silu(gate(x)) * up(x)) of kbit.Linear layers keeps its form (and the plain gate/up
    fusion where that applies), named with the reason; the replaced module and the members are not changed."""
    # (module, reason, whether the plain gate_up_proj fusion still applies)
    cases = [(MLP(act=nn.GELU()), "computes something else than down(silu(gate(x)) * up(x))", True),
             (Swapped(), "computes something else", True),
             (MLP(bias=True), "gate_proj and up_proj have biases", True),
             (Scaled(), "Scaled has tensors GatedMLP does not hold (alpha)", True),
             (ByShape(), "computes something else than down(silu(gate(x)) * up(x)) (relative difference", True)]
    b = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    b.layers[0].up_proj = kbit.Linear.from_linear(nn.Linear(256, 320, bias=False).half(), k=3)
    cases.append((b, "gate_proj and up_proj differ in k (4 / 3)", False))
    b = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    b.layers[0].register_forward_hook(lambda *a: None)
    cases.append((b, "MLP has forward hooks", True))
    b = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    b.layers[0].down_proj.register_forward_pre_hook(lambda *a: None)
    cases.append((b, "down_proj has forward hooks", True))
    b = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    mlp = b.layers[0]
    mlp.forward = lambda x: 2 * MLP.forward(mlp, x)  # (as a hook library sets one)
    cases.append((b, "MLP has a forward of its own set on the instance", True))
    b = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    b.layers[0].up_proj.weight.codebook = torch.linspace(-1, 1, 16)
    cases.append((b, "gate_proj and up_proj have different codebooks", False))
    for m, why, plain in cases:
        model = m if isinstance(m, Model) else quantized_module(Model([m]), gen, torch.float16, "cpu")
        layer = model.layers[0]
        kids = dict(layer.named_children())
        x = randn((3, 256), gen, torch.float16)
        before = model(x)
        result = kbit.fuse_projections(model)
        assert why in result.gated_declined["layers.0"], (why, result.gated_declined)
        assert model.layers[0] is layer and not result.gated_mlps
        if plain:
            assert result.fused == {"layers.0.gate_up_proj": ("gate_proj", "up_proj")}
        else:
            assert "layers.0.gate_up_proj" in result.declined
            assert all(getattr(layer, n) is c for n, c in kids.items())
        assert torch.equal(model(x), before)
    model = quantized_module(Model([MLP(), MLP()]), gen, torch.float16, "cpu")
    result = kbit.fuse_projections(model, skip="layers.1")
    assert result.gated_mlps == ["layers.0"]
    assert result.gated_declined == {"layers.1": "matches skip pattern 'layers.1'"}
    assert result.declined == {"layers.1.gate_up_proj": "matches skip pattern 'layers.1'"}
    # one MLP registered in two places: one GatedMLP in both
    shared = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    shared.layers.append(shared.layers[0])
    x = randn((3, 256), gen, torch.float16)
    want = shared(x)
    result = kbit.fuse_projections(shared)
    assert result.gated_mlps == ["layers.0", "layers.1"] and shared.layers[0] is shared.layers[1]
    assert type(shared.layers[0]) is GatedMLP and rel_err(shared(x), want) < 1e-2
    model = quantized_module(Model([Counting()]), gen, torch.float16, "cpu")
    counting = model.layers[0]
    assert kbit.fuse_projections(model).gated_mlps == ["layers.0"] and type(model.layers[0]) is GatedMLP
    assert not hasattr(counting, "calls")  # (the check ran a copy)
    counting(randn((2, 256), gen, torch.float16))
    assert counting.calls == 1
    model = quantized_module(Model([MLP()]), gen, torch.float16, "cpu")
    result = kbit.fuse_projections(model, gated_mlp=False)
    assert not result.gated_mlps and result.fused == {"layers.0.gate_up_proj": ("gate_proj", "up_proj")}
    with pytest.raises(kbit.nn.NotConvertible, match="has no gate_proj, up_proj and down_proj"):
        gated_mlp_from(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="2I a multiple of 16"):
        SiluGateUp(kbit.quantize(torch.randn(40, 64, generator=gen), k=4), torch.float16)


@pytest.mark.parametrize("how", ["torch.save", "safetensors"])
def test_gated_state_dict_is_the_plain_fusions(how, gen, tmp_path):
    """A GatedMLP's state dict has the plain gate_up_proj fusion's keys and values (natural row order): checkpoints
    load into either form; round trips, copies and casts keep the output."""
    model = quantized_module(Model([MLP(), MLP()]), gen, torch.float16, "cpu")
    plain = copy.deepcopy(model)
    kbit.fuse_projections(model)
    kbit.fuse_projections(plain, gated_mlp=False)
    sd, sd_plain = model.state_dict(), plain.state_dict()
    assert set(sd) == set(sd_plain) and all(torch.equal(sd[key], sd_plain[key]) for key in sd)
    x = randn((4, 256), gen, torch.float16)
    want = model(x)
    loaded = saved_and_loaded(sd, how, tmp_path)
    fresh = quantized_module(Model([MLP(), MLP()]), gen, torch.float16, "cpu")  # other weights
    kbit.fuse_projections(fresh)
    assert not torch.equal(fresh(x), want)
    fresh.load_state_dict(loaded, strict=True)
    assert torch.equal(fresh(x), want)
    other = quantized_module(Model([MLP(), MLP()]), gen, torch.float16, "cpu")
    kbit.fuse_projections(other, gated_mlp=False)
    other.load_state_dict(loaded, strict=True)
    assert torch.equal(other(x), plain(x))
    for c in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(c(x), want)
    model.to(torch.bfloat16)
    assert model.layers[0].dtype == torch.bfloat16 and model.layers[0].down_proj.dtype == torch.bfloat16
    assert rel_err(model(x.bfloat16()), want) < 2e-2
    assert "GatedMLP(" in repr(model) and "silu(gate) * up of 640 rows" in repr(model)


def test_compiled_gated_mlp(gen):
    """torch.compile(fullgraph=True): one gemm_silu_and_mul and one gemm per layer, the eager result."""
    model = quantized_module(Model([MLP(), MLP()]), gen, torch.bfloat16, "cpu")
    kbit.fuse_projections(model)
    x = randn((3, 256), gen, torch.bfloat16)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        out = torch.compile(model, backend=backend, fullgraph=True)(x)
    finally:
        torch._dynamo.reset()
    assert len(graphs) == 1
    targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.kbit.gemm_silu_and_mul.default) == 2
    assert targets.count(torch.ops.kbit.gemm.default) == 2
    assert torch.equal(out, model(x))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gated_mlp_graph_replay(dtype, gen, poisoned_cuda):
    model = quantized_module(Model([MLP(hidden=2048, inter=5120), MLP(hidden=2048, inter=5120)]), gen, dtype, "cuda")
    kbit.fuse_projections(model)
    for M in (1, 2):
        x1, x2 = (randn((M, 2048), gen, dtype).cuda() for _ in range(2))
        check_graph_replay(model, [x1.clone()], [x2])
