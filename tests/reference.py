"""Pure-PyTorch reference of the kbit format, written from docs/format.md only.

Nothing here calls torch.ops.kbit or reads the C++ sources: it is the independent second
implementation the tests compare the extension against. Every floating-point step of the
quantization rule is done with float32 torch ops (IEEE round-to-nearest, no contraction),
except the fused multiply-add, which is computed exactly (see :func:`fma_f32`).

All functions are vectorized; shapes follow the format: W ``[*, N, K]`` with ``*`` empty or E.
"""
from __future__ import annotations

from typing import Tuple

import torch

BLOCK = 32
TILE_ROWS = 16
TILE_COLS = 256
F32 = torch.float32
F64 = torch.float64


# ---------------------------------------------------------------------------------------------
# E4M4 (format.md section 2)
# ---------------------------------------------------------------------------------------------
def e4m4_table() -> torch.Tensor:
    """float32 [256]: the value of every E4M4 byte, from the table in format.md."""
    c = torch.arange(256, dtype=torch.int64)
    e, m = c >> 4, c & 15
    sub = m.to(F64) * 2.0 ** -11
    normal = (16 + m).to(F64) * torch.pow(2.0, (e - 12).to(F64))
    return torch.where(e == 0, sub, normal).to(F32)


E4M4 = e4m4_table()


def bracketing_codes(a: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(down, up): largest code with e4m4(down) <= a and smallest code with e4m4(up) >= a.

    ``a`` float32 >= 0. Values above the largest code (248) get down = up = 255.
    """
    a = a.to(F32)
    down = torch.searchsorted(E4M4, a, right=True) - 1
    up = torch.searchsorted(E4M4, a, right=False).clamp(max=255)
    return down, up


# ---------------------------------------------------------------------------------------------
# Row scale (format.md section 3)
# ---------------------------------------------------------------------------------------------
def row_scale(W: torch.Tensor) -> torch.Tensor:
    """float32 [*, N]: 2^e with max|w| / 2^e in (124, 248], e >= -126; 1 for a zero row; NaN
    for a row holding NaN or Inf."""
    Wf = W.to(F32)
    finite = torch.isfinite(Wf).all(dim=-1)
    amax = torch.where(torch.isfinite(Wf), Wf.abs(), torch.zeros((), dtype=F32)).amax(dim=-1)
    a64 = amax.to(F64)
    # exponent x with a64 = f * 2^x, f in [0.5, 1); then e = x - 8 puts a64 / 2^e in [128, 256):
    # step up once when that lands above 248. All comparisons are exact in float64.
    _, x = torch.frexp(a64)
    e = x.to(torch.int64) - 8
    e = e + (a64 > 248.0 * torch.pow(2.0, e.to(F64))).to(torch.int64)
    e = e.clamp(min=-126)
    rs = torch.pow(2.0, e.to(F64)).to(F32)
    rs = torch.where(amax == 0, torch.ones((), dtype=F32), rs)
    return torch.where(finite, rs, torch.full((), float("nan"), dtype=F32))


# ---------------------------------------------------------------------------------------------
# Exact float32 fma
# ---------------------------------------------------------------------------------------------
def fma_f32(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Correctly rounded float32 ``a * b + c`` for float32 a, b, c.

    ``a * b`` is exact in float64 (24 + 24 <= 53 bits), but ``float32(float64(a*b) + c)``
    rounds twice and is *not* always the fma: when ``a*b`` sits exactly on a float32 midpoint
    and ``c`` is far smaller, the float64 sum drops ``c`` and the tie goes to even (see
    tests/test_reference.py for such a case). So the float64 sum is rounded to *odd*
    (TwoSum gives the exact remainder; a nonzero remainder forces the last bit to 1), and a
    round-to-odd result with >= p + 2 bits rounds correctly to p bits (Boldo & Melquiond).
    """
    a64, b64, c64 = a.to(F64), b.to(F64), c.to(F64)
    p = a64 * b64                      # exact
    s = p + c64                        # RN64
    bb = s - p                         # TwoSum (Knuth): s + err == p + c exactly
    err = (p - (s - bb)) + (c64 - bb)
    bits = s.view(torch.int64)
    even = (bits & 1) == 0
    fix = (err != 0) & even & torch.isfinite(s)
    toward = torch.where(err > 0, torch.full_like(s, float("inf")), torch.full_like(s, float("-inf")))
    s = torch.where(fix, torch.nextafter(s, toward), s)
    return s.to(F32)


# ---------------------------------------------------------------------------------------------
# Quantization rule (format.md section 4)
# ---------------------------------------------------------------------------------------------
def midpoints(cb: torch.Tensor) -> torch.Tensor:
    cb = cb.to(F32)
    return (cb[:-1] + cb[1:]) * torch.tensor(0.5, dtype=F32)


def nearest_index(x: torch.Tensor, cb: torch.Tensor) -> torch.Tensor:
    """#{j : x > mid_j} (int64): nearest codebook entry, midpoints go to the lower index; NaN
    (0 * inf) is greater than no midpoint: index 0."""
    idx = torch.searchsorted(midpoints(cb), x.contiguous(), right=False)  # # of mid_j < x
    return torch.where(torch.isnan(x), torch.zeros_like(idx), idx)


def scale_reciprocal(s: torch.Tensor) -> torch.Tensor:
    """r = 1 / s rounded to float32 (IEEE division), 0 where s == 0."""
    s = s.to(F32)
    r = torch.ones((), dtype=F32) / s
    return torch.where(s == 0, torch.zeros((), dtype=F32), r)


def butterfly_sum32(v: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim (32) in warp xor-butterfly order: offsets 16, 8, 4, 2, 1."""
    assert v.shape[-1] == 32
    off = 16
    while off >= 1:
        v = v[..., :off] + v[..., off:2 * off]
        off //= 2
    return v[..., 0]


def block_indices_and_error(wb: torch.Tensor, s: torch.Tensor, cb: torch.Tensor):
    """Indices and squared error (butterfly sum) of row-normalized blocks wb [..., 32] (float32)
    under block scales s [...] (float32 E4M4 values): x = w' * r with r = 1 / s rounded once per
    block (0 for s = 0); error terms fma(-cb[i], s, w')."""
    cb = cb.to(F32)
    s32 = s.to(F32).unsqueeze(-1).expand_as(wb)
    x = wb * scale_reciprocal(s).unsqueeze(-1)
    idx = nearest_index(x, cb)
    e = fma_f32(-cb[idx], s32, wb)
    return idx, butterfly_sum32(e * e)


def normalized_blocks(W: torch.Tensor, rs: torch.Tensor) -> torch.Tensor:
    """w' = w * (1 / row_scale) as float32 blocks [*, N, K/32, 32] (rows with a NaN scale: 0)."""
    Wf = W.to(F32)
    *lead, K = Wf.shape
    bad = torch.isnan(rs)
    inv = torch.ones((), dtype=F32) / torch.where(bad, torch.ones((), dtype=F32), rs)  # exact
    wn = torch.where(bad.unsqueeze(-1), torch.zeros((), dtype=F32), Wf * inv.unsqueeze(-1))
    return wn.reshape(*lead, K // BLOCK, BLOCK)


def quantize_indices(W: torch.Tensor, cb: torch.Tensor):
    """The format's quantization of W [*, N, K]: (indices [*, N, K] int64, absmax codes
    [*, N, K/32] int64, row_scale [*, N] float32). Rows holding NaN/Inf get index 0, code 0."""
    cb = cb.to(F32)
    *lead, K = W.shape
    assert K % BLOCK == 0
    rs = row_scale(W)
    bad = torch.isnan(rs)
    wb = normalized_blocks(W, rs)
    a = wb.abs().amax(dim=-1)
    down, up = bracketing_codes(a)
    idx_up, err_up = block_indices_and_error(wb, E4M4[up], cb)
    idx_dn, err_dn = block_indices_and_error(wb, E4M4[down], cb)
    # down when strictly better, or when up's absolute block scale overflows float32
    up_overflows = torch.isinf(E4M4[up] * torch.where(bad, torch.ones((), dtype=F32), rs).unsqueeze(-1))
    take_down = (err_dn < err_up) | up_overflows
    code = torch.where(take_down, down, up)
    idx = torch.where(take_down.unsqueeze(-1), idx_dn, idx_up)
    code = torch.where(bad.unsqueeze(-1), torch.zeros_like(code), code)
    idx = torch.where(bad.unsqueeze(-1).unsqueeze(-1), torch.zeros_like(idx), idx)
    return idx.reshape(*lead, K), code, rs


def block_error(W: torch.Tensor, codes: torch.Tensor, rs: torch.Tensor, cb: torch.Tensor):
    """Squared error (the format's sum, row-normalized domain) of every block of W [*, N, K]
    under E4M4 codes [*, N, K/32] and row scales [*, N]."""
    return block_indices_and_error(normalized_blocks(W, rs), E4M4[codes.long()], cb)[1]


def _to_int32(v: torch.Tensor) -> torch.Tensor:
    """uint32 values held in int64 -> the int32 with the same bits."""
    return torch.where(v >= 2 ** 31, v - 2 ** 32, v).to(torch.int32)


def pack_flat(idx: torch.Tensor, k: int) -> torch.Tensor:
    """indices [*, N, K] -> bit-planes int32 [*, N, K/32, k]: bit j of word p is bit p of the
    index of weight 32b + j."""
    *lead, K = idx.shape
    ib = idx.to(torch.int64).reshape(*lead, K // BLOCK, BLOCK)
    sh = torch.arange(BLOCK, dtype=torch.int64)
    planes = [(((ib >> p) & 1) << sh).sum(dim=-1) for p in range(k)]
    return _to_int32(torch.stack(planes, dim=-1))


def unpack_flat(packed: torch.Tensor) -> torch.Tensor:
    """bit-planes int32 [*, N, K/32, k] -> indices [*, N, K] int64."""
    *lead, kb, k = packed.shape
    p = packed.to(torch.int64).unsqueeze(-2)                        # [*, N, KB, 1, k]
    j = torch.arange(BLOCK, dtype=torch.int64).view(BLOCK, 1)
    bits = (p >> j) & 1                                             # [*, N, KB, 32, k]
    idx = (bits << torch.arange(k, dtype=torch.int64)).sum(dim=-1)
    return idx.reshape(*lead, kb * BLOCK)


def quantize(W: torch.Tensor, cb: torch.Tensor, k: int):
    """Reference of torch.ops.kbit.quantize: (packed int32, absmax uint8, row_scale float32)."""
    assert cb.numel() == 1 << k
    idx, code, rs = quantize_indices(W, cb)
    return pack_flat(idx, k), code.to(torch.uint8), rs


def dequantize_from_indices(idx, codes, rs, cb) -> torch.Tensor:
    """float32 [*, N, K]: cb[i] * (e4m4(code) * row_scale), each product rounded to float32."""
    *lead, K = idx.shape
    s = E4M4[codes.long()] * rs.to(F32).unsqueeze(-1).expand(codes.shape)   # [*, N, KB]
    v = cb.to(F32)[idx.long()].reshape(*lead, K // BLOCK, BLOCK) * s.unsqueeze(-1)
    return v.reshape(*lead, K)


def dequantize(packed, absmax, rs, cb, dtype=F32) -> torch.Tensor:
    """Reference of torch.ops.kbit.dequantize (flat layout)."""
    return dequantize_from_indices(unpack_flat(packed), absmax, rs, cb).to(dtype)


# ---------------------------------------------------------------------------------------------
# Tiled layout (format.md section 5)
# ---------------------------------------------------------------------------------------------
def tile_coords():
    """For lane l (32) and pair code c (64): (row in tile, first column in tile), int64 [32, 64].

    c = 4s + r, s = 2b + h (block b of 32 columns, half h); lane l: g = l // 4, t = l % 4;
    register r holds row g (+8 if r is odd) and columns 32b + 16h + 2t (+8 if r >= 2), +1
    (layout version 4: the k-slots of step s are columns 16s .. 16s + 15 in natural order)."""
    lane = torch.arange(32).view(32, 1)
    c = torch.arange(64).view(1, 64)
    g, t = lane // 4, lane % 4
    s, r = c // 4, c % 4
    row = g + 8 * (r % 2)
    b, h = s // 2, s % 2
    col = 32 * b + 16 * h + 8 * (r // 2) + 2 * t
    return row.expand(32, 64), col.expand(32, 64)


def _stream_words(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """Pair indices a, b [..., 32 lanes, 64 codes] -> each lane's 4k stream words (int64,
    unsigned 32-bit values) [..., 32, 4k], per the table of format.md section 5."""
    c = torch.arange(64, dtype=torch.int64)
    parts = []  # (word index [64], shift [64], value [..., 64])
    if k == 2:
        parts.append((c // 8, 4 * (c % 8), a | b << 2))
    elif k == 4:
        parts.append((c // 4, 8 * (c % 4), a | b << 4))
    elif k == 3:
        # 6-bit code c at bits 6c .. 6c+5 of the lane's 384-bit stream (since layout version 3);
        # codes with 6c % 32 > 26 continue in the low bits of the next word
        code = a | b << 3
        word, shift = (6 * c) // 32, (6 * c) % 32
        parts.append((word, shift, code & ((1 << (32 - shift)) - 1)))  # the bits that fit in the word
        spill = shift > 26
        parts.append((torch.where(spill, word + 1, word), torch.zeros_like(shift),
                      torch.where(spill, code >> (32 - shift), 0)))
    elif k == 5:
        parts.append((c // 4, 8 * (c % 4), (a & 15) | (b & 15) << 4))
        parts.append((16 + c // 16, 2 * (c % 16), (a >> 4) | (b >> 4) << 1))
    else:
        raise ValueError(k)
    words = torch.zeros(*a.shape[:-1], 4 * k, dtype=torch.int64)
    for widx, shift, val in parts:
        words.scatter_add_(-1, widx.expand(val.shape), val << shift)  # disjoint bits: add == or
    return words


def repack_indices(idx: torch.Tensor, codes: torch.Tensor, k: int):
    """indices [*, N, K], absmax codes [*, N, K/32] -> tiled (packed int32
    [*, N/16, K/256, k, 32, 4], absmax uint8 [*, N/16, K/256, 128]), padding index 0 / code 0."""
    *lead, N, K = idx.shape
    NT, G = -(-N // TILE_ROWS), -(-K // TILE_COLS)
    full = torch.zeros(*lead, NT * TILE_ROWS, G * TILE_COLS, dtype=torch.int64)
    full[..., :N, :K] = idx
    tiles = full.reshape(*lead, NT, TILE_ROWS, G, TILE_COLS).transpose(-3, -2)  # [*, NT, G, 16, 256]
    row, col = tile_coords()
    a = tiles[..., row, col]          # [*, NT, G, 32, 64]
    b = tiles[..., row, col + 1]
    words = _stream_words(a, b, k)    # [*, NT, G, 32, 4k]
    words = words.reshape(*words.shape[:-1], k, 4).transpose(-3, -2)  # [*, NT, G, k, 32, 4]
    packed_t = _to_int32(words).contiguous()

    KB = K // BLOCK
    fa = torch.zeros(*lead, NT * TILE_ROWS, G * 8, dtype=torch.int64)
    fa[..., :N, :KB] = codes.long()
    at = fa.reshape(*lead, NT, TILE_ROWS, G, 8).transpose(-3, -2)          # [*, NT, G, 16, 8]
    # byte 16 g + 8 h + b = code of tile row g + 8 h, block b
    at = at.reshape(*at.shape[:-2], 2, 8, 8).transpose(-3, -2)              # [*, NT, G, g, h, b]
    absmax_t = at.reshape(*at.shape[:-3], 128).to(torch.uint8).contiguous()
    return packed_t, absmax_t


def repack(packed: torch.Tensor, absmax: torch.Tensor):
    """Reference of torch.ops.kbit.repack."""
    k = packed.shape[-1]
    return repack_indices(unpack_flat(packed), absmax, k)


def gemm(x: torch.Tensor, W_hat64: torch.Tensor) -> torch.Tensor:
    """float64 x [..., K] @ W_hat [N, K]^T."""
    return x.to(F64) @ W_hat64.to(F64).T


def grouped_gemm(x: torch.Tensor, W_hat64: torch.Tensor, offsets) -> torch.Tensor:
    """float64 reference of grouped_gemm: rows offsets[e]:offsets[e+1] of x use W_hat[e]."""
    offsets = [int(o) for o in offsets]
    y = torch.zeros(x.shape[0], W_hat64.shape[-2], dtype=F64)
    for e in range(W_hat64.shape[0]):
        lo, hi = offsets[e], offsets[e + 1]
        if hi > lo:
            y[lo:hi] = x[lo:hi].to(F64) @ W_hat64[e].T
    return y


# ---------------------------------------------------------------------------------------------
# Quality helpers
# ---------------------------------------------------------------------------------------------
def exact_absmax_dequantize(W: torch.Tensor, cb: torch.Tensor) -> torch.Tensor:
    """Blockwise quantization with the exact float absmax as scale (no E4M4, no row scale):
    nearest codebook entry of w / absmax; float64 result."""
    W64 = W.to(F64)
    *lead, K = W64.shape
    wb = W64.reshape(*lead, K // BLOCK, BLOCK)
    A = wb.abs().amax(dim=-1, keepdim=True)
    x = torch.where(A == 0, torch.zeros((), dtype=F64), wb / A)
    cb64 = cb.to(F64)
    mid = (cb64[:-1] + cb64[1:]) / 2
    idx = torch.searchsorted(mid, x.contiguous(), right=False)  # nearest, ties to the lower
    return (cb64[idx] * A).reshape(*lead, K)


def sqnr_db(W: torch.Tensor, W_hat: torch.Tensor) -> float:
    W64, Wh = W.to(F64), W_hat.to(F64)
    return float(10 * torch.log10((W64 ** 2).sum() / ((W64 - Wh) ** 2).sum()))
