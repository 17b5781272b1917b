"""kbit::router_topk (an MoE router's softmax + top-k + renormalisation) against a float64 reference on the CPU and
(gpu marker) CUDA, and kbit.integrations.routers' swap of HF-style top-k router modules."""
import copy
import pickle

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import kbit
from conftest import seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay, cuda_kernel_names
from kbit.integrations.routers import HFTopKRouter, use_kbit_routers

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# weights against float64: the softmax's fp32 error, then one rounding to the dtype (fp16: half a subnormal step below
# 2^-14, where unnormalised weights of many experts fall)
WEIGHT_RTOL = {torch.float32: 1e-5, torch.float16: 1.5e-3, torch.bfloat16: 1e-2}
WEIGHT_ATOL = {torch.float32: 1e-30, torch.float16: 2.0 ** -25, torch.bfloat16: 1e-30}


def reference(logits, top_k, normalize):
    """float64: ids by a stable descending sort of the logits (ties to the lower index; torch.sort puts NaN
    first), weights softmax(logits) at them, renormalised over the top-k."""
    l64 = logits.double().cpu()
    ids = torch.sort(l64, dim=-1, descending=True, stable=True).indices[:, :top_k]
    w = torch.softmax(l64, -1).gather(1, ids)
    if normalize:
        w = w / w.sum(-1, keepdim=True)
    return w, ids


def check(logits, top_k, normalize):
    w, ids = torch.ops.kbit.router_topk(logits, top_k, normalize)
    T = logits.shape[0]
    assert w.shape == ids.shape == (T, top_k) and w.dtype == logits.dtype and ids.dtype == torch.int64
    assert w.device == ids.device == logits.device
    want_w, want_ids = reference(logits, top_k, normalize)
    assert torch.equal(ids.cpu(), want_ids), (T, logits.shape[1], top_k)
    got = w.cpu().double()
    assert torch.equal(got.isnan(), want_w.isnan())
    ok = ~want_w.isnan()
    assert torch.allclose(got[ok], want_w[ok], rtol=WEIGHT_RTOL[logits.dtype], atol=WEIGHT_ATOL[logits.dtype]), \
        ((got - want_w).abs() / want_w.abs()).nan_to_num().max().item()
    return w, ids


# (T, E, top_k): decode (one token; Qwen3-MoE's 128 experts top-8, Qwen3-Next's 512 top-10), prefill rows,
# E not a multiple of 32, top_k 1 and the kernels' 32, each kernel's most experts and the CTA kernel's fewest (one
# warp a row to 256, one CTA a row to 1024), CTA warps with fewer experts than top_k (E = 257, top_k = 32; E = 40 in
# one warp), the one-warp kernel's keys a lane (2 to 64 experts, 4 to 128, 8 to 256) on both sides of each border;
# past those the ATen form (E = 1500, top_k = 40).
CASES = [(1, 128, 8), (1, 512, 10), (37, 60, 4), (5, 1024, 32), (3, 7, 7), (9, 33, 1), (2, 40, 32), (6, 256, 32),
         (3, 257, 32), (2, 64, 32), (2, 65, 32), (3, 100, 8), (2, 129, 8), (2, 1500, 8), (4, 100, 40)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("normalize", [True, False])
def test_router_topk(device, dtype, normalize, request):
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"router-{device}-{dtype}-{normalize}"))
    for T, E, top_k in CASES:
        logits = (torch.randn(T, E, generator=gen) * 3).to(dtype).to(device)
        w, ids = check(logits, top_k, normalize)
        again = torch.ops.kbit.router_topk(logits, top_k, normalize)
        assert_bitwise_equal(again[0], w)
        assert_bitwise_equal(again[1], ids)


@pytest.mark.parametrize("device", DEVICES)
def test_router_topk_ties_nan_inf(device):
    gen = torch.Generator().manual_seed(seed_for(f"router-ties-{device}"))
    # bf16 logits of few values: ties everywhere, at and across the top-k boundary (the lower index wins)
    few = (torch.randint(-4, 4, (6, 300), generator=gen) / 2).bfloat16().to(device)
    for top_k in (1, 5, 32, 33):
        check(few, top_k, True)  # (the CTA kernel, then the ATen form)
        check(few[:, :200], min(top_k, 32), True)  # (the one-warp kernel)
    # -0.0 and +0.0 are one value (index order); NaN ranks first and makes the row's weights NaN; +inf's weight is
    # NaN (inf - inf), -inf's 0
    special = torch.zeros(4, 64)
    special[0, 3], special[0, 10] = -0.0, 0.0
    special[1, 5], special[1, 40] = float("nan"), float("nan")
    special[2, 7] = float("inf")
    special[3, :] = -5.0
    special[3, 2], special[3, 9] = float("-inf"), 1.0
    special[0, 0] = -0.0
    for dtype in DTYPES:
        w, ids = check(special.to(dtype).to(device), 3, True)
        assert ids[1].tolist()[:2] == [5, 40] and w[1].isnan().all()
        w, ids = check(special[:, :32].to(dtype).to(device), 32, False)  # the kernel's whole order: -0.0 at 0 first
        assert ids[0].tolist() == list(range(32)) and ids[3, -1] == 2 and w[3, -1] == 0  # -inf last, weight 0
        check(special.to(dtype).to(device), 64, False)  # (the ATen form: top_k 64)
        wide = torch.full((4, 300), -6.0)  # the same rows in the CTA kernel
        wide[:, :64] = special
        w, ids = check(wide.to(dtype).to(device), 3, True)
        assert ids[1].tolist()[:2] == [5, 40] and w[1].isnan().all()
        w, ids = check(wide.to(dtype).to(device), 32, False)
        assert ids[0].tolist() == list(range(32))
    # a negative NaN ranks first too, in the kernel (E <= 1024) and in the ATen form (E = 1500)
    for E in (48, 1500):
        row = torch.randn(2, E, generator=gen)
        row[0, 7], row[1, E - 1] = -torch.tensor(float("nan")), float("nan")
        w, ids = check(row.to(device), 4, True)
        assert ids[0, 0] == 7 and ids[1, 0] == E - 1


@pytest.mark.parametrize("device", DEVICES)
def test_router_topk_layouts_empty_and_bad_input(device):
    gen = torch.Generator().manual_seed(seed_for(f"router-bad-{device}"))
    big = torch.randn(64, 12, generator=gen).to(device)
    check(big.t(), 5, True)  # a transposed (non-contiguous) view
    check(big[:, ::2].t().contiguous().t(), 3, False)
    for T, E, top_k in ((0, 16, 4), (3, 16, 0), (0, 0, 0)):
        w, ids = torch.ops.kbit.router_topk(torch.zeros(T, E, device=device), top_k, True)
        assert w.shape == ids.shape == (T, top_k) and ids.dtype == torch.int64
    logits = torch.randn(2, 16, device=device)
    with pytest.raises(RuntimeError, match="router_topk: logits must be 2-D \\[tokens, experts\\]"):
        torch.ops.kbit.router_topk(logits[0], 2, True)
    with pytest.raises(RuntimeError, match="router_topk: logits must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.router_topk(logits.double(), 2, True)
    for bad in (-1, 17):
        with pytest.raises(RuntimeError, match=f"router_topk: top_k must be 0 to the number of experts 16 \\(got {bad}"):
            torch.ops.kbit.router_topk(logits, bad, True)
    with pytest.raises(TypeError, match="logits must be a tensor"):
        kbit.router_topk([[1.0, 2.0]], 1)


@pytest.mark.gpu
def test_router_topk_kernel_by_experts():
    """The kernel each expert count runs: one warp a row to 256 experts, one CTA a row to 1024, then ATen ops."""
    warp, cta = "router_topk_warp_kernel", "router_topk_cta_kernel"
    for E, kernel in ((8, warp), (128, warp), (256, warp), (257, cta), (1024, cta), (1025, None)):
        logits = torch.randn(2, E, device="cuda")
        names = cuda_kernel_names(lambda: torch.ops.kbit.router_topk(logits, 2, True))
        ran = {n for n in names if "router_topk" in n and "kernel" in n}
        assert len(ran) == (kernel is not None) and all(kernel in n for n in ran), (E, names)


@pytest.mark.gpu
def test_router_topk_graph_replay(poisoned_cuda):
    gen = torch.Generator().manual_seed(seed_for("router-graph"))
    l1, l2 = (torch.randn(3, 512, generator=gen).bfloat16().cuda() for _ in range(2))
    check_graph_replay(lambda logits: kbit.router_topk(logits, 10, True), [l1.clone()], [l2])


class FakeTopKRouter(nn.Module):
    """transformers 5.24's Qwen3MoeTopKRouter.forward, verbatim in what it computes."""

    def __init__(self, experts, hidden, top_k, norm, bias=False):
        super().__init__()
        self.top_k, self.num_experts, self.norm_topk_prob, self.hidden_dim = top_k, experts, norm, hidden
        self.weight = nn.Parameter(torch.randn(experts, hidden) * hidden ** -0.5)
        if bias:
            self.bias = nn.Parameter(torch.zeros(experts))

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight)
        router_probs = torch.nn.functional.softmax(router_logits, dtype=torch.float, dim=-1)
        router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
        router_top_value = router_top_value.to(router_logits.dtype)
        return router_logits, router_top_value, router_indices


class SigmoidTopKRouter(FakeTopKRouter):  # another scoring (the same experts, other scores): left as it is
    def forward(self, hidden_states):
        logits = F.linear(hidden_states.reshape(-1, self.hidden_dim), self.weight)
        values, idx = torch.topk(torch.sigmoid(logits.float()), self.top_k, dim=-1)
        return logits, values.to(logits.dtype), idx


class BottomKTopKRouter(FakeTopKRouter):  # other experts: left
    def forward(self, hidden_states):
        logits = F.linear(hidden_states.reshape(-1, self.hidden_dim), self.weight)
        values, idx = torch.topk(torch.softmax(logits.float(), -1), self.top_k, dim=-1, largest=False)
        return logits, values.to(logits.dtype), idx


class CastingTopKRouter(FakeTopKRouter):  # an fp32 weight on 16-bit activations by a cast: left (ours has none)
    def forward(self, hidden_states):
        return super().forward(hidden_states.to(self.weight.dtype))


class Block(nn.Module):
    def __init__(self, router):
        super().__init__()
        self.gate = router


def router_model(device, dtype):
    routers = {"a": FakeTopKRouter(128, 64, 8, True), "b": FakeTopKRouter(60, 96, 4, False),
               "c": SigmoidTopKRouter(32, 64, 2, True), "d": FakeTopKRouter(32, 64, 2, True, bias=True),
               "e": BottomKTopKRouter(32, 64, 4, True)}
    model = nn.ModuleDict({n: Block(r) for n, r in routers.items()}).to(device, dtype)
    model["f"] = Block(CastingTopKRouter(16, 64, 2, True).to(device))  # (fp32 weight)
    return model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_use_kbit_routers(device, dtype, monkeypatch):
    torch.manual_seed(seed_for(f"router-swap-{device}-{dtype}"))
    model = router_model(device, dtype)
    originals = {n: m for n, m in model.named_modules() if n.endswith("gate")}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    calls = []
    model["a"].gate.register_forward_hook(lambda mod, args, out: calls.append(out[0].shape))
    result = use_kbit_routers(model)
    assert result.swapped == ["a.gate", "b.gate"], result
    assert "scores are not the softmax" in result.declined["c.gate"], result
    assert "bias" in result.declined["d.gate"] and "other experts" in result.declined["e.gate"], result
    if dtype != torch.float32:
        assert "replacement fails on" in result.declined["f.gate"], result
    # the same objects (isinstance, hooks, parameters and state_dict keys kept)
    assert all(m is originals[n] for n, m in model.named_modules() if n.endswith("gate"))
    assert isinstance(model["a"].gate, HFTopKRouter) and isinstance(model["a"].gate, FakeTopKRouter)
    assert type(model["c"].gate) is SigmoidTopKRouter and model.state_dict().keys() == state.keys()
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    h = torch.randn(2, 3, 64, device=device, dtype=dtype)
    used = []
    real = kbit.router_topk
    monkeypatch.setattr(kbit.api, "router_topk", lambda *a: used.append(1) or real(*a))
    with torch.no_grad():
        logits, scores, idx = model["a"].gate(h)
    want = FakeTopKRouter.forward(model["a"].gate, h)
    assert used and calls == [(6, 128)]  # kbit's op ran; the hook too
    assert torch.equal(logits, want[0]) and idx.shape == want[2].shape == (6, 8)
    probs = torch.softmax(logits.float(), -1)
    assert torch.equal(probs.gather(1, idx).sort(-1).values, probs.gather(1, want[2]).sort(-1).values)
    # with autograd recording (the weight requires grad): the module's own forward, gradients included
    used.clear()
    out = model["a"].gate(h)
    assert not used and all(torch.equal(x, y) for x, y in zip(out, want))
    out[1].float().sum().backward()
    assert model["a"].gate.weight.grad is not None
    assert "kbit.router_topk" in repr(model["a"].gate) and str(result).startswith("kbit routers: 2 swapped")
    assert use_kbit_routers(model).swapped == []  # nothing left to swap
    if dtype == torch.bfloat16:  # the swapped forward compiles whole (kbit's op has a fake kernel)
        compiled = torch.compile(model["b"].gate, fullgraph=True)
        hb = torch.randn(5, 96, device=device, dtype=dtype)
        with torch.no_grad():
            got, eager = compiled(hb), model["b"].gate(hb)
        assert all(torch.equal(x, y) for x, y in zip(got, eager))
    copied = copy.deepcopy(model)  # (the swapped class is a module-level one: copies and pickles find it)
    assert type(copied["a"].gate) is type(model["a"].gate)
    back = pickle.loads(pickle.dumps(model["b"].gate))  # ("a" holds the test's hook, a lambda)
    assert type(back) is type(model["b"].gate) and torch.equal(back.weight, model["b"].gate.weight)


def test_use_kbit_routers_hf_qwen3_moe():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed_for("router-swap-hf"))
    cfg = transformers.Qwen3MoeConfig(vocab_size=64, hidden_size=64, intermediate_size=64, moe_intermediate_size=32,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                      num_experts=16, num_experts_per_tok=4, norm_topk_prob=True,
                                      output_router_logits=True)
    model = transformers.Qwen3MoeForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, 64, (1, 7))
    with torch.no_grad():
        want = model(ids, output_router_logits=True)
        result = use_kbit_routers(model)
        assert result.swapped == [f"model.layers.{i}.mlp.gate" for i in range(2)] and not result.declined, result
        got = model(ids, output_router_logits=True)  # (transformers' router-logit recorders still see the routers)
    assert torch.allclose(got.logits.float(), want.logits.float(), rtol=2e-2, atol=2e-2)
    assert len(got.router_logits) == 2 and all(torch.equal(a, b) for a, b in zip(got.router_logits, want.router_logits))
    assert torch.allclose(got.aux_loss.float(), want.aux_loss.float(), rtol=1e-3)
