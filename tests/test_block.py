"""A whole transformer block on kbit layers (issue 7): attention projections as kbit.Linear and
routed experts as kbit.Experts, around ordinary torch ops (RMSNorm, SDPA, residuals).

* torch.compile(fullgraph=True) traces the block with no graph break and computes what eager
  mode computes (CPU here; CUDA below).
* On CUDA the whole block - dense kernels, sort/offsets, both grouped kernels - is captured in one
  CUDA graph; replays on new inputs give the eager result bit for bit.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kbit
from conftest import randn

H, HEADS, I, E, TOPK, T = 128, 4, 64, 8, 2, 6


class Block(nn.Module):
    def __init__(self, gen):
        super().__init__()
        lin = lambda n, k: nn.Linear(k, n, bias=False)  # noqa: E731
        self.q, self.k, self.v, self.o = lin(H, H), lin(H, H), lin(H, H), lin(H, H)
        for m in (self.q, self.k, self.v, self.o):
            m.weight.data = randn(tuple(m.weight.shape), gen, scale=H ** -0.5)
        self.router = nn.Linear(H, E, bias=False)
        self.router.weight.data = randn((E, H), gen)
        gu = randn((E, 2 * I, H), gen, scale=H ** -0.5)
        dn = randn((E, H, I), gen, scale=I ** -0.5)
        self.experts = kbit.Experts.from_weights(gu, dn, k=4, dtype=torch.float16)

    def forward(self, x):  # x [B, S, H] fp16
        B, S, _ = x.shape
        h = F.rms_norm(x, (H,))
        q, k, v = (p(h).view(B, S, HEADS, H // HEADS).transpose(1, 2) for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, H)
        x = x + self.o(a)
        h = F.rms_norm(x, (H,)).view(B * S, H)
        logits = self.router(h.float())
        w, ids = torch.topk(torch.softmax(logits, dim=-1), TOPK, dim=-1)
        return x + self.experts(h, ids, w).view(B, S, H)


def make_block(gen, device):
    blk = Block(gen)
    blk.router.float()
    for name in ("q", "k", "v", "o"):
        setattr(blk, name, kbit.Linear.from_linear(getattr(blk, name), k=4, dtype=torch.float16))
    return blk.to(device)


def test_block_compiles_fullgraph_cpu(gen):
    blk = make_block(gen, "cpu")
    x = randn((2, T, H), gen, torch.float16)
    eager = blk(x)
    compiled = torch.compile(blk, fullgraph=True)
    y = compiled(x)
    assert torch.isfinite(eager).all()
    # compiled code may fuse the fp16 norms/residuals differently: close, not bitwise
    torch.testing.assert_close(y, eager, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_block_compiles_and_captures_cuda(gen):
    blk = make_block(gen, "cuda")
    x = randn((2, T, H), gen, torch.float16).cuda()
    eager = blk(x)
    torch.testing.assert_close(torch.compile(blk, fullgraph=True)(x), eager, rtol=2e-2, atol=2e-2)

    static_x = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            blk(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = blk(static_x)
    for _ in range(2):
        x2 = randn((2, T, H), gen, torch.float16).cuda()
        static_x.copy_(x2)
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        want = blk(x2)
        assert torch.equal(out, want)
