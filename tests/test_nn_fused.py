"""kbit.nn.fuse_projections: sibling kbit.Linear layers fused into one (CPU and, gpu marker, CUDA)."""
import copy
import pickle
import threading

import pytest
import torch
from torch import nn

import kbit
from conftest import ACT_DTYPES, GEMM_RTOL, quantized_module, randn, rel_err, saved_and_loaded
from cuda_utils import check_graph_replay
from kbit.nn.fused import DEFAULT_GROUPS, LinearSlice, fuse_projections

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


class Block(nn.Module):
    """A decoder block's shape of calls: q, k, v on one tensor (q reshaped to heads, as HF's attention does), then
    a gated MLP, gate and up on one tensor. Biases on q/k/v (Qwen2 has them), none on the MLP."""

    def __init__(self, hidden=256, q_rows=512, k_rows=64, v_rows=72, inter=320, bias=True):
        super().__init__()
        self.q_proj = nn.Linear(hidden, q_rows, bias=bias)
        self.k_proj = nn.Linear(hidden, k_rows, bias=bias)
        self.v_proj = nn.Linear(hidden, v_rows, bias=bias)
        self.o_proj = nn.Linear(q_rows, hidden, bias=False)
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, h):
        q = self.q_proj(h).view(*h.shape[:-1], -1, 64)
        k, v = self.k_proj(h), self.v_proj(h)
        mix = k.sum(-1, keepdim=True) * v.mean(-1, keepdim=True)
        h = h + self.o_proj(q.flatten(-2)) + mix
        return h + self.down_proj(torch.nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


def make_block(gen, dtype, device, k=4, **kw):
    return quantized_module(Block(**kw), gen, dtype, device, k)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_fused_weight_is_the_members_rows(device, dtype, k, gen, request):
    """The fused layer's weight dequantizes to the members' rows bit for bit (v's 72 rows: a partial last tile), its
    bias is theirs; each slice returns its rows of the fused output; the block's output matches the unfused one."""
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    block = make_block(gen, dtype, device, k=k)
    members = {n: getattr(block, n) for names in DEFAULT_GROUPS.values() for n in names}
    xs = [randn((T, 256), gen, dtype).to(device) for T in (1, 4, 37)]
    want = [block(x) for x in xs]
    want_rows = {n: [m(x) for x in xs] for n, m in members.items()}
    result = fuse_projections(block)
    assert result.fused == {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
    assert not result.declined
    for fused_name, names in DEFAULT_GROUPS.items():
        fused = getattr(block, fused_name)
        assert isinstance(fused, kbit.Linear) and fused.k == k and fused.dtype == dtype
        deq = kbit.dequantize(fused.weight.quantized(), torch.float32)
        parts = [kbit.dequantize(members[n].weight.quantized(), torch.float32) for n in names]
        assert torch.equal(deq, torch.cat(parts))
        if fused.bias is not None:
            assert torch.equal(fused.bias, torch.cat([members[n].bias for n in names]))
        for n in names:
            assert isinstance(getattr(block, n), LinearSlice)
    for i, x in enumerate(xs):
        got = block(x)
        assert block.q_proj._shared.x is None and block.gate_proj._shared.x is None  # nothing kept after the block
        assert rel_err(got, want[i]) <= 2 * GEMM_RTOL[dtype], (x.shape, rel_err(got, want[i]))
        if device == "cpu":  # (the CPU op computes each row alone: the same bits)
            assert torch.equal(got, want[i])
        for n in members:
            rows = getattr(block, n)(x)  # (one member alone: a fused call, its rows)
            assert rows.shape == want_rows[n][i].shape and rows.is_contiguous()
            assert rel_err(rows, want_rows[n][i]) <= 2 * GEMM_RTOL[dtype], n
        block.q_proj._shared.x = block.q_proj._shared.parts = None
        block.gate_proj._shared.x = block.gate_proj._shared.parts = None


def test_members_on_other_tensors_and_twice(gen):
    """A member called on another tensor than the one the group's rows were kept for, or twice on one, computes its
    own rows anew (a cross-attention's k / v; a repeated call): always its own rows of its own input."""
    block = make_block(gen, torch.bfloat16, "cpu")
    ref = copy.deepcopy(block)
    fuse_projections(block)
    h, enc = randn((3, 256), gen, torch.bfloat16), randn((5, 256), gen, torch.bfloat16)
    assert torch.equal(block.q_proj(h), ref.q_proj(h))
    with pytest.warns(UserWarning, match="a member of qkv_proj ran the fused layer again while the rows kept"):
        assert torch.equal(block.k_proj(enc), ref.k_proj(enc))
    assert torch.equal(block.v_proj(enc), ref.v_proj(enc))
    assert torch.equal(block.q_proj(h), ref.q_proj(h))
    assert torch.equal(block.q_proj(h), ref.q_proj(h))  # (its rows taken: computed again)
    assert torch.equal(block.v_proj(h), ref.v_proj(h))
    assert torch.equal(block.k_proj(h), ref.k_proj(h))
    # the input changed in place after the rows were kept: computed anew from its new values
    assert torch.equal(block.q_proj(h), ref.q_proj(h))
    h.mul_(2)
    assert torch.equal(block.k_proj(h), ref.k_proj(h)) and torch.equal(block.v_proj(h), ref.v_proj(h))
    # rows kept by one thread are not another's
    assert torch.equal(block.q_proj(h), ref.q_proj(h))
    got = {}
    worker = threading.Thread(target=lambda: got.update(k=block.k_proj(h)))
    worker.start()
    worker.join()
    assert torch.equal(got["k"], ref.k_proj(h))
    # copies and pickles start with nothing kept
    h2 = randn((2, 256), gen, torch.bfloat16)
    block.q_proj(h2)
    assert block.k_proj._shared.x is h2
    for other in (copy.deepcopy(block), pickle.loads(pickle.dumps(block))):
        assert other.q_proj._shared is other.k_proj._shared and other.q_proj._shared.x is None
        assert torch.equal(other.k_proj(h2), ref.k_proj(h2))


def test_declined_groups_and_idempotence(gen):
    block = make_block(gen, torch.float16, "cpu")
    block.gate_proj = nn.Linear(256, 320).half()  # left unquantized
    why = "gate_up_proj: gate_proj is torch.nn.modules.linear.Linear, not kbit.Linear"
    assert why in str(fuse_projections(block))
    cases = []
    b = make_block(gen, torch.float16, "cpu", q_rows=520)
    cases.append((b, "q_proj has 520 rows, not a multiple of 16"))
    b = make_block(gen, torch.float16, "cpu", k_rows=72)
    cases.append((b, "k_proj has 72 rows, not a multiple of 16"))
    b = make_block(gen, torch.float16, "cpu")
    b.k_proj = kbit.Linear.from_linear(nn.Linear(256, 64).half(), k=3)
    cases.append((b, "q_proj and k_proj differ in k (4 / 3)"))
    b = make_block(gen, torch.float16, "cpu")
    b.v_proj = kbit.Linear.from_linear(nn.Linear(256, 72).half(), k=4, codebook=torch.linspace(-1, 1, 16))
    cases.append((b, "q_proj and v_proj have different codebooks"))
    b = make_block(gen, torch.float16, "cpu")
    b.v_proj = kbit.Linear.from_linear(nn.Linear(256, 72, bias=False).half(), k=4)
    cases.append((b, "q_proj and v_proj differ in bias (True / False)"))
    b = make_block(gen, torch.float16, "cpu")
    b.k_proj = b.k_proj.to(torch.bfloat16)
    cases.append((b, "q_proj and k_proj differ in compute dtype"))
    b = make_block(gen, torch.float16, "cpu")
    b.k_proj.register_forward_hook(lambda *a: None)
    cases.append((b, "k_proj has forward hooks"))
    b = make_block(gen, torch.float16, "cpu")
    b.qkv_proj = nn.Identity()
    cases.append((b, "the parent already has an attribute qkv_proj"))
    b = make_block(gen, torch.float16, "cpu")
    b.k_proj = kbit.Linear.from_linear(nn.Linear(288, 64).half(), k=4)
    cases.append((b, "q_proj and k_proj differ in in_features (256 / 288)"))
    b = make_block(gen, torch.float16, "cpu")
    b.v_proj = kbit.Linear.from_linear(nn.Linear(256, 72), k=4, dtype=torch.float16)  # (quantized from fp32)
    cases.append((b, "q_proj and v_proj differ in quantized weight dtype (torch.float16 / torch.float32)"))
    b = make_block(gen, torch.float16, "cpu")
    b.k_proj = b.k_proj.to("meta")
    cases.append((b, "q_proj and k_proj differ in device (cpu / meta)"))
    b = make_block(gen, torch.float16, "cpu")

    class OwnLinear(kbit.Linear):
        pass

    b.v_proj.__class__ = OwnLinear
    cases.append((b, "<locals>.OwnLinear, not kbit.Linear"))
    for b, why in cases:
        before = {n: m for n, m in b.named_children()}
        result = fuse_projections(b)
        assert why in result.declined["qkv_proj"], (why, result.declined)
        assert all(getattr(b, n) is m for n, m in before.items() if n != "gate_proj" and n != "up_proj")
        assert "gate_up_proj" in result.fused
    outer = nn.Sequential(make_block(gen, torch.float16, "cpu"), make_block(gen, torch.float16, "cpu"))
    result = fuse_projections(outer, skip="1")
    assert set(result.fused) == {"0.qkv_proj", "0.gate_up_proj"}
    assert result.declined == {"1.qkv_proj": "matches skip pattern '1'", "1.gate_up_proj": "matches skip pattern '1'"}
    # (a block holding gate_proj, up_proj and down_proj is checked as a gated MLP first: it holds more)
    assert result.gated_declined["0"].startswith("Block has tensors GatedMLP does not hold (q_proj.bias")
    assert result.gated_declined["1"] == "matches skip pattern '1'"
    with pytest.raises(TypeError, match="kbit.fuse_projections: skip must be a callable, a string or a collection"):
        fuse_projections(outer, skip=[1])
    b = make_block(gen, torch.float16, "cpu")
    assert len(fuse_projections(b).fused) == 2
    again = fuse_projections(b)
    assert not again.fused and not again.declined
    with pytest.raises(TypeError, match="must be torch.float16"):
        b(randn((2, 256), gen, torch.bfloat16))


@pytest.mark.parametrize("how", ["torch.save", "safetensors"])
def test_state_dict_copies_and_casts(how, gen, tmp_path):
    block = make_block(gen, torch.float16, "cpu")
    fuse_projections(block)
    x = randn((4, 256), gen, torch.float16)
    want = block(x)
    sd = block.state_dict()
    assert {k for k in sd if "q_proj" in k or "gate_proj" in k} == set()
    assert {"qkv_proj.weight.packed", "qkv_proj.bias", "gate_up_proj.weight.packed"} <= set(sd)
    loaded = saved_and_loaded(sd, how, tmp_path)
    fresh = make_block(gen, torch.float16, "cpu")  # other weights
    fuse_projections(fresh)
    fresh.load_state_dict(loaded)
    assert torch.equal(fresh(x), want)
    unfused = make_block(gen, torch.float16, "cpu")
    with pytest.raises(RuntimeError, match="Missing key.*q_proj"):
        unfused.load_state_dict(loaded)
    for other in (copy.deepcopy(block), pickle.loads(pickle.dumps(block))):
        assert other.q_proj.fused is other.qkv_proj and other.qkv_proj is not block.qkv_proj
        assert torch.equal(other(x), want)
    block.to(torch.bfloat16)
    assert block.q_proj.dtype == torch.bfloat16 and block.qkv_proj.bias.dtype == torch.bfloat16
    assert rel_err(block(x.bfloat16()), want) < 2e-2


def test_compiled_block_one_fused_call(gen):
    """torch.compile(fullgraph=True): one kbit.gemm for q/k/v and one for gate/up (four in all against the unfused
    block's seven), the same result as eager."""
    block = make_block(gen, torch.bfloat16, "cpu")
    x = randn((3, 256), gen, torch.bfloat16)

    def gemm_calls(module):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        torch._dynamo.reset()
        out = torch.compile(module, backend=backend, fullgraph=True)(x)
        assert len(graphs) == 1
        return out, sum(n.op == "call_function" and n.target is torch.ops.kbit.gemm.default for n in graphs[0].graph.nodes)

    assert gemm_calls(block)[1] == 7
    fuse_projections(block)
    eager = block(x)
    out, calls = gemm_calls(block)
    assert calls == 4 and torch.equal(out, eager) and block.q_proj._shared.x is None
    torch._dynamo.reset()


@pytest.mark.gpu
def test_fused_block_graph_replay(gen, poisoned_cuda):
    block = make_block(gen, torch.bfloat16, "cuda")
    fuse_projections(block)
    x1, x2 = (randn((1, 256), gen, torch.bfloat16).cuda() for _ in range(2))
    check_graph_replay(block, [x1.clone()], [x2])
