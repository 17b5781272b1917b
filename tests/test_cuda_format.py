"""CUDA quantize / dequantize / repack / unrepack / dequantize_tiled are bit-exact vs the CPU ops
(which tests/test_format.py and tests/test_layout.py check against the reference)."""
import pytest
import torch

import kbit
from conftest import (ADVERSARIAL_KINDS, KS, W_DTYPES, make_weight, poison_cuda_cache, random_codebook,
                      random_flat)
from cuda_utils import assert_all_bitwise_equal, assert_bitwise_equal, check_graph_replay

pytestmark = pytest.mark.gpu

DEV = "cuda"
Q_NAMES = ("packed", "absmax", "row_scale")
SHAPES = [(1, 32), (3, 96), (17, 512), (100, 2048), (257, 4096), (2, 17, 96), (5, 3, 512), (64, 9, 160),
          (5, 32800)]  # the last: rows of > 1024 blocks, quantized a CTA per row
ids = lambda s: "x".join(map(str, s))  # noqa: E731


def cpu_and_cuda_quantize(W, cb, k):
    want = torch.ops.kbit.quantize(W, cb, k)
    got = torch.ops.kbit.quantize(W.to(DEV), cb.to(DEV), k)
    for t in got:
        assert t.device.type == "cuda"
    return got, want


def test_poison_helper_poisons_fresh_allocations():
    keep = torch.ones(1000, device=DEV)  # a live small-pool allocation next to free memory
    poison_cuda_cache()
    for n, dt in [(7, torch.bfloat16), (100_000, torch.float16), (3_000_000, torch.float32)]:
        t = torch.empty(n, dtype=dt, device=DEV)
        assert torch.isnan(t).all(), (n, dt)
        del t
        poison_cuda_cache()
    assert (keep == 1).all(), "poisoning must not touch live tensors"


def test_cuda_kernels_compiled():
    assert kbit.cuda_kernels_compiled(), "this kbit build has no CUDA kernels"


# ---------------------------------------------------------------------------------------------
# quantize
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=ids)
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_cuda_equals_cpu(k, dtype, shape, gen, poisoned_cuda):
    W = make_weight("normal", shape, dtype, gen=gen)
    got, want = cpu_and_cuda_quantize(W, kbit.codebook(k), k)
    assert_all_bitwise_equal(got, want, Q_NAMES)


@pytest.mark.parametrize("kind", ADVERSARIAL_KINDS)
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_cuda_adversarial(k, dtype, kind, gen, poisoned_cuda):
    W = make_weight(kind, (37, 1056), dtype, k=k, gen=gen)
    got, want = cpu_and_cuda_quantize(W, kbit.codebook(k), k)
    assert_all_bitwise_equal(got, want, Q_NAMES)


@pytest.mark.parametrize("k", KS)
def test_quantize_cuda_user_codebook(k, gen):
    W = make_weight("normal", (33, 512), torch.float32, gen=gen)
    for cb in (random_codebook(k, gen), random_codebook(k, gen, include_ends=True),
               torch.linspace(-0.5, 0.25, 1 << k)):
        got, want = cpu_and_cuda_quantize(W, cb, k)
        assert_all_bitwise_equal(got, want, Q_NAMES)


def _bucket_grid_codebook(k):
    # 2^k ascending values (n + 1/2) / 64 whose midpoints are bucket edges (m + 1/2) / 64
    # of the CUDA kernel's 1/64-wide nearest-index buckets (csrc/cuda/format/bucket_search.cuh),
    # 2^(7-k) / 64 apart: every bucket holds at most one midpoint, so the lookup is used.
    step = 1 << (7 - k)
    n = torch.arange(1 << k) * step - 64 + step // 2
    return ((n + 0.5) / 64).float()


def _bucket_edge_weight(k, cb, dtype, gen):
    """[40, 1056] weights whose normalized values x = w / s sit on bucket edges, midpoints and
    codebook values of cb: blocks with absmax 128 (one candidate scale, x = w / 128), 132 (the
    'down' scale 128 gives |x| <= 1.03) and 1.99 / 2048 (E4M4 codes 1 and 2: the 'down' x
    reaches 1.99, the far end of the buckets), each row's first block of absmax 128 (row scale 1)."""
    edges = (torch.arange(-128, 129, dtype=torch.float64) - 0.5) / 64
    cbd = cb.double()
    values = torch.cat([edges, (cbd[1:] + cbd[:-1]) / 2, cbd, torch.zeros(1)])
    rows, blocks = 40, 33
    W = torch.empty(rows, blocks, 32, dtype=torch.float64)
    kinds = torch.randint(0, 3, (rows, blocks), generator=gen)
    kinds[:, 0] = 0
    for kind, (absmax, unit) in enumerate([(128.0, 128.0), (132.0, 128.0), (1.99 / 2048, 1 / 2048)]):
        pool = values[values.abs() * unit <= absmax] * unit
        sel = kinds == kind
        count = int(sel.sum())
        picks = pool[torch.randint(0, pool.numel(), (count, 32), generator=gen)]
        sign = torch.where(torch.rand(count, generator=gen) < 0.5, -1.0, 1.0).double()
        picks[:, torch.randint(0, 32, (1,), generator=gen).item()] = absmax * sign
        W[sel] = picks
    W = W.view(rows, blocks * 32).to(dtype)
    assert W.double().view(rows, blocks, 32).abs().amax(-1).ge(1.98 / 2048).all()  # exact in dtype
    return W


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("k", KS)
def test_quantize_cuda_bucket_lookup_and_fallback(k, dtype, gen):
    # For k >= 4 (and k = 3 from bf16) the CUDA kernel finds nearest indices in a bucket table
    # where that reproduces the binary search and falls back to the binary search elsewhere
    # (otherwise: always the binary search); every path must match the CPU op bit for bit. Codebooks: on the bucket grid (lookup; weights exactly on bucket edges and on
    # midpoints), the default (lookup), three entries 1/256 apart (two midpoints 1/256 apart:
    # fallback; one close pair alone still leaves its midpoints a bucket apart), unsorted through
    # the raw op (fallback: the binary search's answer for unsorted midpoints is the rule).
    dense = kbit.codebook(k).clone()
    dense[1:3] = dense[0] + torch.tensor([1 / 256, 2 / 256])
    unsorted = kbit.codebook(k).flip(0).contiguous()
    for cb in (_bucket_grid_codebook(k), kbit.codebook(k), dense, unsorted):
        W = _bucket_edge_weight(k, cb, dtype, gen)
        got, want = cpu_and_cuda_quantize(W, cb, k)
        assert_all_bitwise_equal(got, want, Q_NAMES)


@pytest.mark.parametrize("shape", [(70001, 32), (1, 65536), (3, 40000, 64)], ids=ids)
def test_quantize_cuda_extreme_grids(shape, gen):
    # many rows (more than a 65535 grid dimension), one very long row, big expert stack
    W = make_weight("normal", shape, torch.bfloat16, gen=gen)
    got, want = cpu_and_cuda_quantize(W, kbit.codebook(4), 4)
    assert_all_bitwise_equal(got, want, Q_NAMES)


@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_quantize_cuda_non_contiguous(dtype, gen):
    base = make_weight("normal", (96, 64), dtype, gen=gen).to(DEV)
    Wt = base.t()  # [64, 96] column-major
    assert not Wt.is_contiguous()
    got = torch.ops.kbit.quantize(Wt, kbit.codebook(3).to(DEV), 3)
    want = torch.ops.kbit.quantize(Wt.contiguous(), kbit.codebook(3).to(DEV), 3)
    assert_all_bitwise_equal(got, want, Q_NAMES)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("dtype", W_DTYPES, ids=str)
def test_quantize_cuda_non_finite(dtype, bad, gen):
    W = make_weight("normal", (6, 128), dtype, gen=gen)
    W[4, 100] = bad
    got, want = cpu_and_cuda_quantize(W, kbit.codebook(4), 4)
    assert torch.isnan(got[2][4]).item()
    ok = torch.arange(6) != 4
    assert_all_bitwise_equal([t.cpu()[ok] for t in got], [t[ok] for t in want], Q_NAMES)
    with pytest.raises(ValueError, match="non-finite"):
        kbit.quantize(W.to(DEV), k=4)


@pytest.mark.parametrize("layout", ["flat", "tiled"])
@pytest.mark.parametrize("k", KS)
def test_api_quantize_on_cuda(k, layout, gen):
    W = make_weight("normal", (3, 40, 544), torch.float16, gen=gen)
    Wc = W.to(DEV)
    W_before = Wc.clone()
    qc = kbit.quantize(Wc, k=k, layout=layout)
    assert torch.equal(Wc, W_before)
    assert qc.device.type == "cuda" and qc.codebook.device.type == "cuda"
    qh = kbit.quantize(W, k=k, layout=layout)
    assert_all_bitwise_equal([qc.packed, qc.absmax, qc.row_scale, qc.codebook],
                             [qh.packed, qh.absmax, qh.row_scale, qh.codebook],
                             ["packed", "absmax", "row_scale", "codebook"])
    assert_bitwise_equal(kbit.dequantize(qc), kbit.dequantize(qh), "dequantize")
    # moving between devices keeps every bit; state dicts load on the CPU
    assert_bitwise_equal(qc.cpu().packed, qh.packed)
    sd = qc.state_dict()
    q2 = kbit.QuantizedWeight.from_state_dict({key: t.cpu() for key, t in sd.items()})
    assert_bitwise_equal(q2.to_layout(layout).packed, qh.packed)


# ---------------------------------------------------------------------------------------------
# dequantize / layouts
# ---------------------------------------------------------------------------------------------
LAYOUT_SHAPES = [(1, 32), (17, 288), (100, 2080), (3, 33, 544), (64, 9, 96)]


@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=ids)
@pytest.mark.parametrize("k", KS)
def test_dequantize_cuda_equals_cpu(k, shape, gen, poisoned_cuda):
    packed, absmax, rs = random_flat(shape, k, gen)
    cb = random_codebook(k, gen)
    for dt in W_DTYPES:
        want = torch.ops.kbit.dequantize(packed, absmax, rs, cb, k, dt)
        got = torch.ops.kbit.dequantize(packed.to(DEV), absmax.to(DEV), rs.to(DEV), cb.to(DEV), k, dt)
        assert_bitwise_equal(got, want, f"dequantize {dt}")


@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=ids)
@pytest.mark.parametrize("k", KS)
def test_repack_unrepack_cuda_equals_cpu(k, shape, gen, poisoned_cuda):
    packed, absmax, _ = random_flat(shape, k, gen)
    want = torch.ops.kbit.repack(packed, absmax)
    got = torch.ops.kbit.repack(packed.to(DEV), absmax.to(DEV))
    assert_all_bitwise_equal(got, want, ("packed_tiled", "absmax_tiled"))
    back = torch.ops.kbit.unrepack(*got, shape[-2], shape[-1])
    assert_all_bitwise_equal(back, (packed, absmax), ("packed", "absmax"))
    # unrepack on CUDA of the CPU-made tiled tensors
    back2 = torch.ops.kbit.unrepack(want[0].to(DEV), want[1].to(DEV), shape[-2], shape[-1])
    assert_all_bitwise_equal(back2, (packed, absmax), ("packed", "absmax"))


@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=ids)
@pytest.mark.parametrize("k", KS)
def test_dequantize_tiled_cuda_equals_cpu(k, shape, gen, poisoned_cuda):
    check_dequantize_tiled(k, shape, gen)


def check_dequantize_tiled(k, shape, gen, label=""):
    """dequantize_tiled on CUDA of a random weight's tiled layout, bitwise the CPU flat dequantize, every dtype (the
    cache poisoned before each call: an output element never written reads NaN)."""
    packed, absmax, rs = random_flat(shape, k, gen)
    cb = random_codebook(k, gen)
    pt, at = torch.ops.kbit.repack(packed, absmax)
    for dt in W_DTYPES:
        want = torch.ops.kbit.dequantize(packed, absmax, rs, cb, k, dt)
        poison_cuda_cache()
        got = torch.ops.kbit.dequantize_tiled(pt.to(DEV), at.to(DEV), rs.to(DEV), cb.to(DEV), k,
                                              shape[-1], dt)
        assert_bitwise_equal(got, want, f"dequantize_tiled {shape} {dt}{label}")


@pytest.mark.parametrize("parts", [1, 2, 4, 8])
@pytest.mark.parametrize("k", KS)
def test_dequantize_tiled_parts_equal_cpu(k, parts, gen, poisoned_cuda):
    """Each tile split into 1-8 work items (the aid; the rule picks by tile count): K tails of 1, 3 and 5 blocks (288,
    2080, 544, 96 and 416 columns: tails ending inside the first part, inside a later one and past whole parts), an
    expert stack, and 5100 tiles with a 2-block tail (4800 x 4160: at every count more items than a 132-SM GPU's
    resident warps, so warps loop over items and prefetch their next tile)."""
    previous = kbit._C._set_dequant_parts(parts)
    try:
        assert kbit._C._dequant_parts(1) == parts and kbit._C._dequant_parts(10 ** 6) == parts
        for shape in [(17, 288), (100, 2080), (3, 33, 544), (64, 9, 96), (17, 416), (4800, 4160)]:
            check_dequantize_tiled(k, shape, gen, f" parts={parts}")
    finally:
        kbit._C._set_dequant_parts(previous)


def test_dequant_parts_rule_and_aid():
    # the rule (dequantize.cu, dequant_parts_log2): the most parts, up to 8, whose items the GPU's resident warps
    # (SMs x 4 CTAs x 8 warps) take in one round; bad aid values raise and leave the rule
    warps = torch.cuda.get_device_properties(0).multi_processor_count * 32
    for tiles in (1, 256, 2048, 2560, warps // 2, warps // 2 + 1, warps, warps + 1, 14336):
        want = max([p for p in (1, 2, 4, 8) if tiles * p <= warps] or [1])
        assert kbit._C._dequant_parts(tiles) == want, (tiles, want)
    if warps == 132 * 32:  # Qwen3 KV, Q / O, gate/up / down on the H100 and H200 (session 49)
        assert [kbit._C._dequant_parts(t) for t in (256, 2048, 2560)] == [8, 2, 1]
    for bad in (-1, 3, 16):
        with pytest.raises(RuntimeError, match="parts must be 0"):
            kbit._C._set_dequant_parts(bad)
    assert kbit._C._set_dequant_parts(0) == 0  # the rule, untouched by the refusals
    with pytest.raises(RuntimeError, match="tiles must be >= 1"):
        kbit._C._dequant_parts(0)


def test_cuda_ops_reject_mixed_devices(gen):
    W = make_weight("normal", (17, 64), gen=gen)
    cb = kbit.codebook(4)
    with pytest.raises(RuntimeError, match="device"):
        torch.ops.kbit.quantize(W.to(DEV), cb, 4)
    p, a, r = torch.ops.kbit.quantize(W, cb, 4)
    with pytest.raises(RuntimeError, match="device"):
        torch.ops.kbit.dequantize(p.to(DEV), a.to(DEV), r, cb.to(DEV), 4, torch.float32)
    with pytest.raises(RuntimeError, match="device"):
        torch.ops.kbit.repack(p.to(DEV), a)


# ---------------------------------------------------------------------------------------------
# CUDA graphs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", KS)
def test_graph_quantize(k, gen):
    cb = kbit.codebook(k).to(DEV)
    W0 = make_weight("normal", (2, 33, 544), torch.bfloat16, gen=gen).to(DEV)
    W1 = make_weight("outlier_row", (2, 33, 544), torch.bfloat16, gen=gen).to(DEV)
    check_graph_replay(lambda W: torch.ops.kbit.quantize(W, cb, k), [W0], [W1], list(Q_NAMES))


@pytest.mark.parametrize("k", KS)
def test_graph_layout_ops(k, gen):
    shape = (2, 33, 544)
    N, K = shape[-2:]
    cb = random_codebook(k, gen).to(DEV)
    flat0 = [t.to(DEV) for t in random_flat(shape, k, gen)]
    flat1 = [t.to(DEV) for t in random_flat(shape, k, gen)]
    tiled0 = [t.clone() for t in torch.ops.kbit.repack(*flat0[:2])]
    tiled1 = [t.clone() for t in torch.ops.kbit.repack(*flat1[:2])]
    fresh = lambda ts: [t.clone() for t in ts]  # noqa: E731  (replay overwrites static inputs)
    check_graph_replay(lambda p, a, r: torch.ops.kbit.dequantize(p, a, r, cb, k, torch.float16),
                       fresh(flat0), flat1)
    check_graph_replay(lambda p, a: torch.ops.kbit.repack(p, a), fresh(flat0[:2]), flat1[:2])
    check_graph_replay(lambda p, a: torch.ops.kbit.unrepack(p, a, N, K), fresh(tiled0), tiled1)
    check_graph_replay(lambda p, a, r: torch.ops.kbit.dequantize_tiled(p, a, r, cb, k, K, torch.bfloat16),
                       fresh(tiled0) + [flat0[2].clone()], tiled1 + [flat1[2]])
