"""kbit::router_topk (an MoE router's softmax + top-k + renormalisation) against a float64 reference on the CPU and
(gpu marker) CUDA, and kbit.integrations.routers' swap of HF-style top-k router modules."""
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import kbit
from conftest import seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay
from kbit.integrations.routers import HFTopKRouter, use_kbit_routers

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# weights against float64: the softmax's fp32 error, then one rounding to the dtype
WEIGHT_RTOL = {torch.float32: 1e-5, torch.float16: 1.5e-3, torch.bfloat16: 1e-2}


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
    assert torch.allclose(got[ok], want_w[ok], rtol=WEIGHT_RTOL[logits.dtype], atol=1e-30), \
        ((got - want_w).abs() / want_w.abs()).nan_to_num().max().item()
    return w, ids


# (T, E, top_k): decode (one token; Qwen3-MoE's 128 experts top-8, Qwen3-Next's 512 top-10), prefill rows,
# E not a multiple of 32, top_k 1 and the kernel's 32, E = 1024 (the kernel's most); past those the ATen form
# (E = 1500, top_k = 40).
CASES = [(1, 128, 8), (1, 512, 10), (37, 60, 4), (5, 1024, 32), (3, 7, 7), (9, 33, 1), (2, 1500, 8), (4, 100, 40)]


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
        check(few, top_k, True)
    # -0.0 and +0.0 are one value (index order); NaN ranks first and makes the row's weights NaN; +inf's weight is
    # NaN (inf - inf), -inf's 0
    special = torch.zeros(4, 64)
    special[0, 3], special[0, 10] = -0.0, 0.0
    special[1, 5], special[1, 40] = float("nan"), float("nan")
    special[2, 7] = float("inf")
    special[3, :] = -5.0
    special[3, 2], special[3, 9] = float("-inf"), 1.0
    for dtype in DTYPES:
        w, ids = check(special.to(dtype).to(device), 3, True)
        assert ids[1].tolist()[:2] == [5, 40] and w[1].isnan().all()
        check(special.to(dtype).to(device), 64, False)  # every expert, -inf last with weight 0


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


class Block(nn.Module):
    def __init__(self, router):
        super().__init__()
        self.gate = router


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_use_kbit_routers(device, dtype):
    torch.manual_seed(seed_for(f"router-swap-{device}-{dtype}"))
    model = nn.ModuleDict({"a": Block(FakeTopKRouter(128, 64, 8, True)), "b": Block(FakeTopKRouter(60, 96, 4, False)),
                           "c": Block(SigmoidTopKRouter(32, 64, 2, True)),
                           "d": Block(FakeTopKRouter(32, 64, 2, True, bias=True))}).to(device, dtype)
    originals = {n: m for n, m in model.named_modules() if n.endswith("gate")}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    result = use_kbit_routers(model)
    assert result.swapped == ["a.gate", "b.gate"], result
    assert "scores differ" in result.declined["c.gate"] and "bias" in result.declined["d.gate"], result
    assert isinstance(model["a"].gate, HFTopKRouter) and model["c"].gate is originals["c.gate"]
    assert model["a"].gate.weight is originals["a.gate"].weight  # shared, not copied
    assert model.state_dict().keys() == state.keys()
    h = torch.randn(2, 3, 64, device=device, dtype=dtype)
    logits, scores, idx = model["a"].gate(h)
    want = originals["a.gate"](h)
    assert torch.equal(logits, want[0]) and idx.shape == want[2].shape == (6, 8)
    probs = torch.softmax(logits.float(), -1)
    assert torch.equal(probs.gather(1, idx).sort(-1).values, probs.gather(1, want[2]).sort(-1).values)
    assert "kbit.router_topk" in repr(model["a"].gate) and str(result).startswith("kbit routers: 2 swapped")
    assert use_kbit_routers(model).swapped == []  # nothing left to swap


def test_use_kbit_routers_hf_qwen3_moe():
    qwen3_moe = pytest.importorskip("transformers.models.qwen3_moe.modeling_qwen3_moe")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen3MoeConfig(hidden_size=64, num_experts=16, num_experts_per_tok=4, norm_topk_prob=True)
    block = qwen3_moe.Qwen3MoeSparseMoeBlock(cfg)
    for p in block.parameters():
        nn.init.normal_(p, std=0.2)
    block = block.to(torch.bfloat16)
    h = torch.randn(1, 5, 64).bfloat16()
    want = block(h)
    assert use_kbit_routers(block).swapped == ["gate"]
    assert isinstance(block.gate, HFTopKRouter)
    got = block(h)
    assert got.shape == want.shape and torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2)
