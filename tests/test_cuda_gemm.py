"""CUDA kbit.gemm / kbit.grouped_gemm against the float64 reference."""
import functools
import os
import subprocess
import sys

import pytest
import torch

import kbit
import reference as R
from conftest import ACT_DTYPES, GEMM_RTOL, KS, make_weight, random_codebook, seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay, cuda_kernel_names

from benchmarks.session import tuning_aids

pytestmark = pytest.mark.gpu

DEV = "cuda"
MS = [0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256]
NK = [(1, 32), (17, 96), (257, 5120), (4097, 96)]


@functools.lru_cache(maxsize=None)
def weight(k, N, K, dtype=torch.float16, E=0):
    """(CUDA QuantizedWeight, its float64 dequantization on CUDA) for a seeded Gaussian weight."""
    g = torch.Generator().manual_seed(seed_for(f"cuda-gemm-{k}-{E}-{N}-{K}-{dtype}"))
    shape = (E, N, K) if E else (N, K)
    qh = kbit.quantize(make_weight("normal", shape, dtype, gen=g), k=k)
    flat = qh.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double()
    return qh.to(DEV), W_hat.to(DEV)


def acts(M, K, dtype, tag):
    g = torch.Generator().manual_seed(seed_for(f"cuda-x-{M}-{K}-{dtype}-{tag}"))
    return torch.randn(M, K, generator=g).to(dtype).to(DEV)


def skip_unless_runs(op, k, M):
    if op == "wgmma_gemm" and not kbit._C.wgmma_gemm_runs(k, max(M, 1)):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")


def check(y, x, W_hat, dtype):
    ref = x.double() @ W_hat.T
    assert y.device.type == "cuda" and y.dtype == dtype and y.shape == ref.shape
    assert not torch.isnan(y).any()
    if ref.numel():
        err = float((y.double() - ref).norm() / ref.norm())
        assert err <= GEMM_RTOL[dtype], err


def check_call(fn, x, W_hat, dtype):
    """y = fn(x) against the reference, with x left as it was; returns y."""
    x_before = x.clone()
    y = fn(x)
    assert torch.equal(x, x_before)
    check(y, x, W_hat, dtype)
    return y


@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("nk", NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemm_cuda_matches_reference(k, dtype, nk, M, poisoned_cuda):
    qw, W_hat = weight(k, *nk, dtype)
    check_call(lambda x: kbit.gemm(x, qw), acts(M, nk[1], dtype, "ref"), W_hat, dtype)


@pytest.mark.parametrize("M", MS)
@pytest.mark.parametrize("nk", [(17, 96), (257, 5120), (33, 2080), (4100, 2080)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("op", ["mma_gemm", "tile_gemm", "wgmma_gemm"])
def test_kernel_any_m(op, k, dtype, nk, M, poisoned_cuda):
    # each tensor-core kernel itself at every M (gemm dispatches by measured crossovers):
    # token tiles of 8/16/32/64, chunks past 64 (wgmma: of 80-160), split-K (257 x 5120), a K tail (2080).
    # Small-M kernel: two warps per unit (N >= 4096, M > 8). Tile and wgmma kernels: a CTA tile of 256
    # rows (wgmma from M = 33 often 128: wgmma_plan) that N fills partly (17, 257: warps / 64-row wgmma
    # blocks with no row tile), 17 row blocks (4100).
    skip_unless_runs(op, k, M)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, {"mma_gemm": "mma", "tile_gemm": "tile", "wgmma_gemm": "wgmma"}[op])
    fn = getattr(torch.ops.kbit, op)
    y = fn(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    check(y, x, W_hat, dtype)
    if M:
        assert_bitwise_equal(fn(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k), y)


@pytest.mark.parametrize("decode", ["mma", "shuffle"])
@pytest.mark.parametrize("M", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("nk", [(1, 32), (17, 96), (257, 5120), (33, 2080), (4097, 96), (100, 14336), (4801, 4352),
                                (12000, 1024)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_gemm_matches_reference(k, dtype, nk, M, decode, poisoned_cuda):
    # the GEMV, both decodes: CTAs over 16-row tiles (odd N: a partial last tile), warps over the
    # 256-column groups (K = 32 / 96: one partial group; 2080: a 32-column tail; 5120 and
    # 14336: several groups per warp, the next group's copies in flight; 4801 x 4352: 301 tiles,
    # more than the shuffle decode's CTAs that fit at once, so its CTAs loop over tiles and
    # prefetch across them, and 17 groups on 16 (shuffle) or 4 (mma: more tiles than SMs) warps, so
    # warp 0 takes several groups of every tile; 12000 x 1024: 750 tiles, more than the mma
    # decode's CTAs that fit at once on the H100 (4 per SM: registers), so its CTAs loop over tiles
    # too: both halves of the partial sums, the row scale reloaded per unit)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv")
    fn = lambda xx: torch.ops.kbit.gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k, decode)  # noqa: E731
    y = check_call(fn, x, W_hat, dtype)
    if M:
        assert_bitwise_equal(fn(x), y)


@pytest.mark.parametrize("M", [5, 8, 9, 12, 16])
@pytest.mark.parametrize("nk", [(1, 32), (17, 96), (257, 5120), (33, 2080), (4801, 4352), (12000, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_gemm_mma_more_rows(k, dtype, nk, M, poisoned_cuda):
    # the mma decode past 4 rows: 8 token slots (M = 5, 8: lanes g >= M read slots never copied,
    # whose D columns are never stored) and 16 (M = 9, 12, 16: two n = 8 tiles per decoded A
    # fragment); the shapes of test_gemv_gemm_matches_reference that change the grid and warps
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-rows")
    fn = _mma_gemv(qw, k)
    # a 16-row call of NaN first: its x slots likely still hold NaN when the M-row call leaves the
    # slots past M uncopied, which must reach only D columns that are never stored
    fn(torch.full((16, nk[1]), float("nan"), device=DEV, dtype=dtype))
    y = check_call(fn, x, W_hat, dtype)
    assert_bitwise_equal(fn(x), y)
    # the rows in reverse order give the same rows reversed: the tokens are the mma's independent n
    # columns (M = 16: rows 0 and 15 swap n tiles), each summed in the same order
    assert_bitwise_equal(fn(x.flip(0).contiguous()), y.flip(0))


def _mma_gemv(qw, k):
    """x -> gemv_gemm(x, qw's tensors, k, 'mma'): the GEMV tests' call."""
    return lambda xx: torch.ops.kbit.gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k, "mma")


def _is_h100():
    """The GPU the launch rules and the dispatch table were measured on (132 SMs, compute 9.0)."""
    props = torch.cuda.get_device_properties(0)
    return (props.major, props.minor, props.multi_processor_count) == (9, 0, 132)


def test_gemv_launch_plan():
    # kbit._C._gemv_launch_plan: what gemv_gemm launches (the token slots, decode, warps, shared
    # memory with and without the spread's padding, CTAs per SM, grid), and the tuning aids' effect
    # on it. Exact numbers on the H100 the design notes were measured on; the rules anywhere.
    props = torch.cuda.get_device_properties(0)
    on_h100 = _is_h100()
    plan = kbit._C._gemv_launch_plan
    for M, slots in ((1, 1), (3, 3), (4, 4), (5, 8), (8, 8), (9, 16), (16, 16)):
        p = plan(M, 4096, 2048, 4)
        assert (p["token_slots"], p["decode"]) == (slots, "mma")
        assert p["launch_smem_bytes"] >= p["smem_bytes"] > 0 and 1 <= p["grid"] <= 256
    assert plan(3, 4096, 2048, 4, "shuffle")["decode"] == "shuffle"
    # KV size (32 tiles, fewer than the SMs): spread to one CTA per SM; without the spread two fit
    kv = plan(1, 512, 2048, 4)
    assert kv["grid"] == min(32, kv["ctas_per_sm"] * props.multi_processor_count)
    assert kbit._C._set_gemv_spread(False) is True
    try:
        unspread = plan(1, 512, 2048, 4)
    finally:
        assert kbit._C._set_gemv_spread(True) is False
    assert unspread["launch_smem_bytes"] == unspread["smem_bytes"] == kv["smem_bytes"]
    assert unspread["ctas_per_sm"] >= kv["ctas_per_sm"]
    # the slot floor: dense mma launches only, never below M's own slots
    prev = kbit._C._set_gemv_min_token_slots(8)
    try:
        assert plan(3, 4096, 2048, 4)["token_slots"] == 8
        assert plan(9, 4096, 2048, 4)["token_slots"] == 16
        assert plan(3, 4096, 2048, 4, "shuffle")["token_slots"] == 3
    finally:
        assert kbit._C._set_gemv_min_token_slots(prev) == 8
    if on_h100:
        assert (kv["warps"], kv["ctas_per_sm"], unspread["ctas_per_sm"]) == (8, 1, 2)
        assert kv["launch_smem_bytes"] > kv["smem_bytes"]
        q = plan(1, 4096, 2048, 4)  # 256 tiles, 4 warps: 4 fit per SM, spread to 2
        assert (q["warps"], q["ctas_per_sm"], q["grid"]) == (4, 2, 256)
        big = plan(1, 14336, 4096, 4)  # Llama-3 8B gate/up: 896 tiles fill every CTA that fits, no padding
        assert (big["ctas_per_sm"], big["grid"], big["launch_smem_bytes"]) == (4, 528, big["smem_bytes"])
        prev = kbit._C._set_gemv_x_resident(0)  # x staged
        try:
            q16 = plan(16, 4096, 2048, 4)  # 16 slots: a 4-warp CTA fits once per SM, so 8 warps
        finally:
            kbit._C._set_gemv_x_resident(prev)
        assert (q16["token_slots"], q16["warps"], q16["ctas_per_sm"]) == (16, 8, 1)
    # dense launches with x staged have one unit slot (the CTA's warps are the unit's), whatever K and
    # the aids say (M = 1: x staged under the rule)
    for K, wpu in ((96, 1), (512, 2), (768, 3), (2048, None)):
        for decode in ("mma", "shuffle"):
            p = plan(1, 16384, K, 4, decode)
            assert p["warps"] == p["warps_per_unit"] and (wpu is None or p["warps"] == wpu)
    prev = kbit._C._set_gemv_max_unit_slots(1)
    try:
        assert plan(1, 16384, 512, 4)["warps"] == 2
    finally:
        assert kbit._C._set_gemv_max_unit_slots(prev) == 1
    with pytest.raises(RuntimeError, match="_set_gemv_max_unit_slots: slots must be 1 to 8; got 9"):
        kbit._C._set_gemv_max_unit_slots(9)
    # warps per unit set (mma decode; dense: the CTA's warps)
    prev = kbit._C._set_gemv_unit_warps(2)
    try:
        p = plan(1, 4096, 2048, 4)
        assert (p["warps_per_unit"], p["warps"]) == (2, 2) and plan(1, 4096, 2048, 4, "shuffle")["warps"] == 8
    finally:
        assert kbit._C._set_gemv_unit_warps(prev) == 2
    with pytest.raises(RuntimeError, match="_set_gemv_unit_warps: warps must be 0 .* to 8; got -1"):
        kbit._C._set_gemv_unit_warps(-1)
    # x resident (dense mma decode): by the rule from 8 token slots where the x image fits (not K = 14336
    # at 16 slots: 448 KB), x is reused (more units than the staged launch's CTAs) and the warps per SM
    # are at least staged x's; mode 2 wherever it fits; mode 0 never; never with the shuffle decode;
    # 2 ring stages with x staged, 2-4 with x resident
    assert not any(plan(M, 4096, 2048, 4)["x_resident"] for M in (1, 4))
    assert plan(16, 4096, 14336, 4)["x_resident"] is False
    for p in (plan(M, N, K, 4) for M in (1, 8, 16) for N, K in ((4096, 2048), (14336, 4096))):
        assert (2 <= p["ring_stages"] <= 4) if p["x_resident"] else (p["ring_stages"] == 2)
    if on_h100:  # the most warps per SM, then the fewest items per warp on the critical path (unit rounds x
        # groups per warp), then the fewest rounds. Qwen3 Q M = 8: 256 tiles on 264 staged CTAs (no
        # reuse), staged; M = 16 (16 slots, k = 4, 5: CTAs of at most 8 warps at 2 stages, session 47): one CTA of two
        # 4-warp slots (256 units in one round, two groups per warp, against two rounds of one); M = 32 (512
        # units, token chunks): four 4-warp slots (one round of two groups, against two of one); 5-8 rows: 4 warps
        # per unit and 2 stages (session 29), but 8 where K has 16 or more groups or the 4-warp CTAs sit unevenly on
        # the SMs (session 47): gate/up M = 8 (320 units, 160 4-warp-slot CTAs on 132 SMs): two CTAs of one 8-warp
        # unit per SM; Llama-3 8B gate/up M = 8 (16 groups): one CTA of two 8-warp slots; GLM shared gate/up M = 8
        # (640 units: 264 CTAs of two 4-warp slots, two per SM): 4 warps; O M = 8: staged
        q8, q16, q32, g8, b8, glm8 = (plan(M, N, K, 4) for M, N, K in (
            (8, 4096, 2048), (16, 4096, 2048), (32, 4096, 2048), (8, 5120, 2048), (8, 14336, 4096), (8, 10240, 2048)))
        assert q8["x_resident"] is False and plan(8, 2048, 4096, 4)["x_resident"] is False
        for p, warps, wpu, stages, ctas in ((q16, 8, 4, 2, 1), (q32, 16, 4, 2, 1), (g8, 8, 8, 2, 2), (b8, 16, 8, 2, 1),
                                            (glm8, 8, 4, 2, 2)):
            assert (p["x_resident"], p["warps"], p["warps_per_unit"], p["ring_stages"], p["ctas_per_sm"]) == \
                (True, warps, wpu, stages, ctas)
        # Qwen3 down M = 32 (K = 5120: token chunks): x resident at 4 warps per SM against staged x's 8
        down32 = plan(32, 2048, 5120, 4)
        assert (down32["x_resident"], down32["warps"], down32["ring_stages"]) == (True, 4, 3)
        prev = kbit._C._set_gemv_max_unit_slots(1)  # the aid caps the resident slots too
        try:
            one = plan(16, 4096, 2048, 4)
            kbit._C._set_gemv_max_unit_slots(2)  # Q M = 32 without four slots: two 8-warp slots
            two = plan(32, 4096, 2048, 4)
        finally:
            kbit._C._set_gemv_max_unit_slots(prev)
        assert (one["x_resident"], one["warps"], one["warps_per_unit"], one["ring_stages"]) == (True, 8, 8, 2)
        assert (two["x_resident"], two["warps"], two["warps_per_unit"], two["ring_stages"]) == (True, 16, 8, 2)
    prev = kbit._C._set_gemv_x_resident(2)
    try:
        assert plan(1, 4096, 2048, 4)["x_resident"] is True and plan(1, 4096, 2048, 4, "shuffle")["x_resident"] is False
        if on_h100:
            assert plan(8, 4096, 8192, 4)["x_resident"] is True
        stages_prev = kbit._C._set_gemv_resident_stages(2)
        try:
            assert plan(1, 4096, 2048, 4)["ring_stages"] == 2
        finally:
            kbit._C._set_gemv_resident_stages(stages_prev)
        assert kbit._C._set_gemv_x_resident(0) == 2
        assert plan(16, 4096, 2048, 4)["x_resident"] is False
    finally:
        kbit._C._set_gemv_x_resident(prev)
    with pytest.raises(RuntimeError, match="_set_gemv_resident_stages: stages must be 0 .* or 2 to 4; got 5"):
        kbit._C._set_gemv_resident_stages(5)
    with pytest.raises(RuntimeError, match="_set_gemv_x_resident: mode must be 0 .*got 3"):
        kbit._C._set_gemv_x_resident(3)
    # past 16 rows: token chunks of 16 rows, a grid of whole chunks
    for M, chunks in ((16, 1), (17, 2), (32, 2), (33, 3), (64, 4), (65, 5), (128, 8)):
        p = plan(M, 4096, 2048, 4)
        assert (p["token_slots"], p["token_chunks"]) == (16, chunks) and p["grid"] % chunks == 0
    with pytest.raises(RuntimeError, match="_gemv_launch_plan: needs 1 <= M <= 128"):
        plan(129, 4096, 2048, 4)
    with pytest.raises(RuntimeError, match="_gemv_launch_plan: decode='shuffle' takes at most 4 rows; got M=5"):
        plan(5, 4096, 2048, 4, "shuffle")


def test_gemv_tuning_aids_keep_the_bits(poisoned_cuda):
    # kbit._C._set_gemv_min_token_slots, _set_gemv_spread and _set_gemv_max_unit_slots (A/B runs) change the launch
    # (test_gemv_launch_plan), not the bits: M = 3 through the kernels with 4, 8 and 16 token slots,
    # and with the spread on and off. 300 x 480 (K <= 512: two warps per CTA on any GPU, so the same
    # summation order in every kernel; a K tail; 19 tiles, padded to fewer CTAs per SM)
    qw, W_hat = weight(4, 300, 480, torch.float16)
    x = acts(3, 480, torch.float16, "gemv-slots")
    fn = lambda: torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, "mma")  # noqa: E731
    y = fn()
    check(y, x, W_hat, torch.float16)
    for slots in (4, 8, 16):
        prev = kbit._C._set_gemv_min_token_slots(slots)
        try:
            assert kbit._C._gemv_launch_plan(3, 300, 480, 4)["token_slots"] == slots
            assert_bitwise_equal(fn(), y)
        finally:
            assert kbit._C._set_gemv_min_token_slots(prev) == slots
    with pytest.raises(RuntimeError, match="_set_gemv_min_token_slots: slots must be 1, 2, 3, 4, 8 or 16.*got 5"):
        kbit._C._set_gemv_min_token_slots(5)
    assert kbit._C._set_gemv_spread(False) is True
    try:
        assert_bitwise_equal(fn(), y)
    finally:
        assert kbit._C._set_gemv_spread(True) is False
    # grouped unit slots: 7 experts x 3 rows of 300 x 480 (19 tiles each, two warps per unit: 133
    # units over CTAs of four 2-warp slots, so the last CTA with a unit has three slots without
    # one), or one unit per CTA: the same bits
    qg, Wg = weight(4, 300, 480, torch.float16, E=7)
    xg = acts(21, 480, torch.float16, "gemv-slots-g")
    og = offsets([3] * 7)
    gfn = lambda: torch.ops.kbit.grouped_gemv_gemm(xg, qg.packed, qg.absmax, qg.row_scale, qg.codebook, og, 4)  # noqa: E731
    check_grouped(qg, Wg, xg, [3] * 7, torch.float16)
    yg = gfn()
    prev = kbit._C._set_gemv_max_unit_slots(1)
    try:
        assert_bitwise_equal(gfn(), yg)
    finally:
        assert kbit._C._set_gemv_max_unit_slots(prev) == 1
    # warps per unit set: 1 warp per unit (other partial sums, so checked against the reference)
    prev = kbit._C._set_gemv_unit_warps(1)
    try:
        check(fn(), x, W_hat, torch.float16)
        check_grouped(qg, Wg, xg, [3] * 7, torch.float16, gemv_decode="mma")
    finally:
        assert kbit._C._set_gemv_unit_warps(prev) == 1


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemv_one_warp_per_unit_stores_from_its_lanes(dtype, poisoned_cuda):
    # One warp per unit (the launcher's choice for many grouped units; forced here with
    # _set_gemv_unit_warps(1)): the mma kernels of 1-8 token slots store a unit's sums straight from
    # the warp's D fragments (no trip through shared memory). Grouped chunks of 1, 2, 3 and 8 rows
    # with experts of fewer rows than the chunk, the per-warp and the per-CTA schedule (E = 40),
    # N = 300 (a last tile of 12 rows: rows g + 8 past N), and dense M = 1, 3, 5 (8 slots)
    prev = kbit._C._set_gemv_unit_warps(1)
    try:
        for E, N, K, counts in ((8, 300, 544, [1, 0, 1, 1, 0, 1, 1, 1]), (6, 300, 544, [2, 1, 2, 2, 0, 2]),
                                (5, 300, 544, [3, 3, 1, 0, 3]), (4, 300, 544, [8, 5, 0, 8]),
                                (40, 33, 96, [1, 0] * 20)):
            qw, W_hat = weight(4, N, K, dtype, E=E)
            x = acts(sum(counts), K, dtype, f"onewarp{E}")
            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
        qw, W_hat = weight(4, 300, 544, dtype)
        for M in (1, 3, 5):
            x = acts(M, 544, dtype, f"onewarp-dense{M}")
            check_call(lambda xx: torch.ops.kbit.gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, "mma"),
                       x, W_hat, dtype)
    finally:
        assert kbit._C._set_gemv_unit_warps(prev) == 1


def test_gemv_remembered_plan_follows_the_aids(poisoned_cuda):
    # the launcher remembers a plan per (device, shape, tuning aids): a repeated call repeats the
    # bits; a tuning aid changed between two calls of one shape gets the new plan (1 warp per unit
    # sums the 17 groups in another order than the rule's warps: other bits, a stale plan would
    # repeat them); set back, the rule's plan and bits again
    qw, W_hat = weight(4, 4801, 4352)
    x = acts(16, 4352, torch.float16, "gemv-memo")
    fn = lambda: torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, "mma")  # noqa: E731
    assert kbit._C._gemv_launch_plan(16, 4801, 4352, 4, "mma")["warps_per_unit"] > 1
    y_rule = check_call(lambda xx: fn(), x, W_hat, torch.float16)
    assert_bitwise_equal(fn(), y_rule)
    prev = kbit._C._set_gemv_unit_warps(1)
    try:
        y_one = fn()
        check(y_one, x, W_hat, torch.float16)
        assert not torch.equal(y_one, y_rule)
        assert_bitwise_equal(fn(), y_one)
    finally:
        assert kbit._C._set_gemv_unit_warps(prev) == 1
    assert_bitwise_equal(fn(), y_rule)


def _split_whole_tiles(plan, N, K):
    """The 16-row tiles a cluster-split launch (plan: _gemv_launch_plan's) writes out from one CTA: the
    tiles inside one CTA's steps (scalar_gemv_split.cuh's schedule, mirrored)."""
    C, warps = plan["split_cluster"], plan["warps"]
    clusters, tiles, groups = plan["grid"] // C, (N + 15) // 16, (K + 255) // 256
    n_steps = (groups + warps - 1) // warps
    base, extra = divmod(tiles, clusters)  # cluster c: base tiles, one more for c < extra
    whole = []
    for c in range(clusters):
        t0 = c * base + min(c, extra)
        t1 = t0 + base + (c < extra)
        steps = (t1 - t0) * n_steps
        begins = [r * steps // C for r in range(C + 1)]
        assert all(b < e for b, e in zip(begins, begins[1:])), "a CTA without steps"
        for t in range(t0, t1):
            first = (t - t0) * n_steps
            whole += [t] * any(b <= first and first + n_steps <= e for b, e in zip(begins, begins[1:]))
    return whole


SPLIT_NK = [(4801, 4352), (257, 5120), (33, 2080), (12000, 1024), (17, 96)]  # the cluster split tests' weights


@pytest.mark.parametrize("M", [1, 2, 3, 4])
@pytest.mark.parametrize("nk", SPLIT_NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_cluster_split(k, dtype, nk, M, poisoned_cuda):
    # the dense GEMV's cluster split (scalar_gemv_split.cuh) forced to clusters of 2, 4 and 8 CTAs, against
    # the reference and, on the tiles one CTA covers whole, bitwise against the plain kernel (the same warps
    # summed in the same order); tiles split over several CTAs (pieces added up in rank order through
    # distributed shared memory) bitwise the same on a second run. 301 tiles of 17 groups (4 warps: one at
    # a tile's last step), 17 tiles of 20 groups (8 warps), 3 tiles with a K tail (6 steps over the CTAs of
    # one cluster), 750 tiles of one step each (no tile split), and 2 tiles of one partial group (no split
    # of 4 or 8 fits: the plain kernel runs).
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-split")
    fn = _mma_gemv(qw, k)
    prev = kbit._C._set_gemv_split_cluster(2)
    try:
        if torch.cuda.get_device_capability()[0] < 9:  # clusters: sm_90+; forced or not, the plain kernel runs
            assert kbit._C._gemv_launch_plan(M, *nk, k)["split_cluster"] == 0
            pytest.skip("the cluster split needs an sm_90+ GPU")
        kbit._C._set_gemv_split_cluster(0)
        plain = fn(x)
        assert kbit._C._gemv_launch_plan(M, *nk, k)["split_cluster"] == 0
        for cluster in (2, 4, 8):
            kbit._C._set_gemv_split_cluster(cluster)
            plan = kbit._C._gemv_launch_plan(M, *nk, k)
            # (too few tiles for a cluster of 4 or 8 CTAs at one step per tile, or of 8 at two: plain)
            fits = not ((nk == (17, 96) and cluster > 2) or (nk == (33, 2080) and cluster == 8))
            assert plan["split_cluster"] == (cluster if fits else 0) and (not fits or plan["grid"] % cluster == 0)
            y = check_call(fn, x, W_hat, dtype)
            assert_bitwise_equal(fn(x), y)
            if plan["split_cluster"]:
                rows = [r for t in _split_whole_tiles(plan, *nk) for r in range(16 * t, min(16 * t + 16, nk[0]))]
                assert_bitwise_equal(y[:, rows], plain[:, rows], f"whole tiles, clusters of {cluster}")
    finally:
        kbit._C._set_gemv_split_cluster(prev)
    if M == 3 and k == 4:
        prev = kbit._C._set_gemv_split_cluster(4)
        try:
            check_graph_replay(fn, [x.clone()], [acts(M, nk[1], dtype, "gemv-split-b")])
        finally:
            kbit._C._set_gemv_split_cluster(prev)


def test_gemv_cluster_split_plan():
    # the rule: at k = 5, clusters of 2 where the plain grid takes the tiles in two or more rounds; plain
    # elsewhere (k <= 4 since session 28); never past 4 rows, for the shuffle decode or x resident (the decode rule
    # takes 2-4 rows on such shapes)
    plan = kbit._C._gemv_launch_plan
    props = torch.cuda.get_device_properties(0)
    if props.major < 9:  # clusters: sm_90+
        assert plan(1, 28672, 8192, 5)["split_cluster"] == 0
        pytest.skip("the cluster split needs an sm_90+ GPU")
    assert plan(1, 512, 2048, 5)["split_cluster"] == 0  # KV: 32 tiles of one step, on as many CTAs
    assert plan(5, 28672, 8192, 5)["split_cluster"] == 0 and plan(1, 28672, 8192, 5, "shuffle")["split_cluster"] == 0
    p = plan(1, 28672, 8192, 5)  # 1792 tiles: more than two rounds on any GPU the tests run on
    assert (p["split_cluster"], p["grid"] % 2) == (2, 0) and p["grid"] <= p["ctas_per_sm"] * props.multi_processor_count
    assert all(plan(M, 28672, 8192, k)["split_cluster"] == 0 for M in (1, 2, 3, 4) for k in (2, 3, 4))
    if _is_h100():
        for M in (2, 3, 4):  # x resident (the decode rule), no split
            p = plan(M, 28672, 8192, 5)
            assert p["x_resident"] and p["split_cluster"] == 0
        # Llama-3 70B gate/up at M = 1, k = 5: 1792 tiles on 396 plain CTAs (4.5 rounds; 3 a SM beside the 32 KB
        # split pair table, pair_table.cuh): 198 clusters of 2; 8B gate/up at M = 1 (896 tiles, 2.3 rounds since
        # that table; 1.7 on 528 CTAs before): clusters too; Qwen3 gate/up at M = 4 (320 tiles, one round): plain
        big = plan(1, 28672, 8192, 5)
        assert (big["split_cluster"], big["grid"], big["warps"], big["ctas_per_sm"]) == (2, 396, 4, 3)
        assert plan(1, 14336, 4096, 5)["split_cluster"] == 2 and plan(4, 5120, 2048, 5)["split_cluster"] == 0
    prev = kbit._C._set_gemv_split_cluster(0)
    try:
        assert plan(1, 28672, 8192, 5)["split_cluster"] == 0
        assert kbit._C._set_gemv_split_cluster(8) == 0
        assert plan(1, 2048, 4096, 4)["split_cluster"] == 8
    finally:
        kbit._C._set_gemv_split_cluster(prev)
    for bad in (1, 3, 16, -2):
        with pytest.raises(RuntimeError, match=f"_set_gemv_split_cluster: cluster must be -1 .*got {bad}"):
            kbit._C._set_gemv_split_cluster(bad)


LAYOUT_NK = [(4801, 4352), (257, 5120), (33, 2080), (17, 96), (12000, 1024)]  # the staged layouts' test weights


@pytest.mark.parametrize("M", [1, 2, 3, 4])
@pytest.mark.parametrize("nk", LAYOUT_NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_staged_layouts(k, dtype, nk, M, poisoned_cuda):
    # the dense x-staged GEMV's CTA layouts (GemvStagedLayout) forced, against the reference and bitwise against
    # one unit per CTA (the same lookups, products and warp order per unit; the cluster split off, whose split
    # tiles sum in another order): unit slots at 2, 3 and 4 ring stages, and at k = 4 the wide pair table (entries
    # 256 bytes apart, the rings in its gaps). 301 tiles of 17 groups (a tile's last group on one warp of 4), 17
    # tiles of 20 groups, 3 tiles with a K tail, 2 tiles of one partial group (1 warp per unit, 8 slots: the
    # direct store), 750 tiles of 4 groups
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-layout")
    fn = _mma_gemv(qw, k)
    # (x staged: the layouts are x-staged launches', and the decode rule takes x resident on some GPUs' shapes)
    prev = (kbit._C._set_gemv_split_cluster(0), kbit._C._set_gemv_staged_layout(0), kbit._C._set_gemv_staged_stages(0),
            kbit._C._set_gemv_x_resident(0))
    try:
        single = fn(x)
        assert kbit._C._gemv_launch_plan(M, *nk, k)["staged_layout"] == 0
        cases = [(1, 2), (1, 3), (1, 4)] + [(2, 0)] * (k == 4)
        for layout, stages in cases:
            kbit._C._set_gemv_staged_layout(layout)
            kbit._C._set_gemv_staged_stages(stages)
            plan = kbit._C._gemv_launch_plan(M, *nk, k)
            assert plan["split_cluster"] == 0 and plan["staged_layout"] in (layout, 0)
            if _is_h100():  # (elsewhere fewer stages or slots where the shared memory cannot hold them)
                assert (plan["staged_layout"], plan["warps"], plan["ring_stages"]) == (layout, 8, stages or 2)
            y = check_call(fn, x, W_hat, dtype)
            assert_bitwise_equal(y, single, f"layout {layout}, {stages} stages, against one unit per CTA")
            assert_bitwise_equal(fn(x), y)
            if M == 3 and stages != 3:
                check_graph_replay(fn, [x.clone()], [acts(M, nk[1], dtype, "gemv-layout-b")])
    finally:
        kbit._C._set_gemv_split_cluster(prev[0])
        kbit._C._set_gemv_staged_layout(prev[1])
        kbit._C._set_gemv_staged_stages(prev[2])
        kbit._C._set_gemv_x_resident(prev[3])


def test_gemv_staged_layout_plan():
    # forced, the unit-slot layouts apply to dense mma-decode launches of 1-4 rows with x staged (the wide table at
    # k = 4 only): not to 5+ rows, the shuffle decode, x resident or grouped launches; the aids' values are checked
    plan = kbit._C._gemv_launch_plan
    # (x staged: at 2-4 rows the decode rule takes x resident on the 8B size)
    prev = (kbit._C._set_gemv_staged_layout(2), kbit._C._set_gemv_staged_stages(0), kbit._C._set_gemv_x_resident(0))
    try:
        for M in (1, 2, 3, 4):
            p = plan(M, 14336, 4096, 4)
            assert p["staged_layout"] == 2 and not p["x_resident"] and p["split_cluster"] == 0
            assert p["smem_bytes"] >= 65536 and p["warps_per_unit"] == 4
            assert p["warps"] == 8 or not _is_h100()  # (one slot where two do not fit)
        assert plan(5, 14336, 4096, 4)["staged_layout"] == plan(1, 14336, 4096, 4, "shuffle")["staged_layout"] == 0
        assert all(plan(1, 14336, 4096, k)["staged_layout"] == 0 for k in (2, 3, 5))  # (wide: k = 4 only)
        assert kbit._C._grouped_gemv_launch_plan(8, 8, 1024, 2048, 4)["staged_layout"] == 0
        kbit._C._set_gemv_staged_layout(1)
        assert all(plan(1, 14336, 4096, k)["staged_layout"] == 1 for k in (2, 3, 4, 5))
        kbit._C._set_gemv_staged_stages(3)
        p = plan(2, 14336, 4096, 3)
        assert (p["staged_layout"], p["ring_stages"], p["warps"], p["warps_per_unit"]) == (1, 3, 8, 4)
        kbit._C._set_gemv_x_resident(2)
        p = plan(4, 14336, 4096, 4)
        assert p["x_resident"] and p["staged_layout"] == 0
        kbit._C._set_gemv_x_resident(0)
        kbit._C._set_gemv_staged_layout(0)
        assert plan(1, 14336, 4096, 4)["staged_layout"] == 0
    finally:
        kbit._C._set_gemv_staged_layout(prev[0])
        kbit._C._set_gemv_staged_stages(prev[1])
        kbit._C._set_gemv_x_resident(prev[2])
    for bad in (3, -2, 8):
        with pytest.raises(RuntimeError, match=f"_set_gemv_staged_layout: layout must be -1 .*got {bad}"):
            kbit._C._set_gemv_staged_layout(bad)
    for bad in (1, 5, -1):
        with pytest.raises(RuntimeError, match=f"_set_gemv_staged_stages: stages must be 0 .*got {bad}"):
            kbit._C._set_gemv_staged_stages(bad)


@functools.lru_cache(maxsize=1)  # (~0.8 GB of float64 reference for the largest; the tests take one weight at a time)
def big_weight(k, N, K, dtype):
    """(CUDA QuantizedWeight quantized on the GPU, its float64 reference dequantization (on the CPU) on the GPU):
    weights too big to quantize on the CPU in a test."""
    g = torch.Generator(device=DEV).manual_seed(seed_for(f"cuda-big-{k}-{N}-{K}-{dtype}"))
    qw = kbit.quantize(torch.randn(N, K, device=DEV, generator=g).to(dtype), k=k)
    flat = qw.to_layout("flat")
    W_hat = R.dequantize(flat.packed.cpu(), flat.absmax.cpu(), flat.row_scale.cpu(), flat.codebook.cpu())
    return qw, W_hat.double().to(DEV)


@pytest.mark.parametrize("M", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("k_nk", [(4, 12800, 1024), (2, 17024, 1024), (4, 12800, 8192)], ids=lambda c: "k%d-%dx%d" % c)
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemv_decode_x_resident(dtype, k_nk, M, poisoned_cuda):
    # the rule's x resident at 2-4 rows (tiles over two or more rounds of the staged grid on a 132-SM GPU: 800 tiles
    # on 396 staged CTAs at k = 4, 1064 on 528 at k = 2) and at 5-8 rows where it takes x resident (4 warps per unit,
    # unit slots; 8 on K of 16 or more groups), against the reference, bitwise run to run and through a graph replay;
    # where its warps per unit are the staged plan's (K = 1024: 4 groups, 4 warps), bitwise against x staged
    k, N, K = k_nk
    qw, W_hat = big_weight(k, N, K, dtype)
    x = acts(M, K, dtype, "gemv-decode-xres")
    fn = _mma_gemv(qw, k)
    plan = kbit._C._gemv_launch_plan(M, N, K, k)
    if M >= 5:
        assert not plan["x_resident"] or plan["warps_per_unit"] == min(8 if K // 256 >= 16 else 4, K // 256)
    else:  # session 66's rule (on the H100 / H200 x resident at session 37's warps per unit, as before)
        assert (plan["x_resident"], plan["warps_per_unit"] if plan["x_resident"] else None) == \
            _decode_plan_by_path(M, N, K, k), plan
        if _is_h100():
            assert plan["x_resident"] and plan["warps_per_unit"] == min(8, max(4, (K // 256) // 4), K // 256)
    y = check_call(fn, x, W_hat, dtype)
    assert_bitwise_equal(fn(x), y)
    if plan["x_resident"] and K == 1024:
        prev = kbit._C._set_gemv_x_resident(0)
        try:
            p_staged = kbit._C._gemv_launch_plan(M, N, K, k)
            assert not p_staged["x_resident"] and p_staged["warps_per_unit"] == plan["warps_per_unit"]
            assert_bitwise_equal(y, fn(x), "x resident against x staged")
        finally:
            kbit._C._set_gemv_x_resident(prev)
    if M in (3, 8):
        check_graph_replay(fn, [x.clone()], [acts(M, K, dtype, "gemv-decode-xres-b")])


@pytest.mark.parametrize("k", [2, 4, 5])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemv_decode_by_path_forms(dtype, k, poisoned_cuda):
    # the x-resident forms session 66's rule takes, forced (x resident, 2 / 4 / 8 warps per unit) on K of 14 and 20
    # groups (each warp of a unit at most 7, 4 or 2 groups; 10, 5 or 3), N = 600 (38 tiles, the last one of 8
    # rows), 1, 2 and 4 rows, against the reference; and the rule's own plan on Llama-3 8B's fused gate/up (x resident
    # at 8 warps per unit at one row on the H100 / H200)
    for K in (3584, 5120):
        qw, W_hat = weight(k, 600, K, dtype)
        fn = _mma_gemv(qw, k)
        for w in (2, 4, 8):
            with tuning_aids(gemv_x_resident=2, gemv_unit_warps=w):
                for M in (1, 2, 4):
                    p = kbit._C._gemv_launch_plan(M, 600, K, k)
                    assert p["x_resident"] and p["warps_per_unit"] == w, p
                    check_call(fn, acts(M, K, dtype, f"by-path-{w}"), W_hat, dtype)
    if k == 4:
        qw, W_hat = big_weight(4, 28672, 4096, dtype)
        for M in (1, 4):
            p = kbit._C._gemv_launch_plan(M, 28672, 4096, 4)
            assert not _is_h100() or (p["x_resident"] and p["warps_per_unit"] == 8), p
            assert not _is_h100() or kbit._C.gemm_dispatch(M, 28672, 4096, 4, 0, str(dtype)[6:])[0] == "gemv"
            y = check_call(lambda xx: kbit.gemm(xx, qw), acts(M, 4096, dtype, "by-path-8b"), W_hat, dtype)
            assert_bitwise_equal(kbit.gemm(acts(M, 4096, dtype, "by-path-8b"), qw), y)


def _decode_plan_by_path(M, N, K, k=4):
    """Session 66's dense decode rule at 1-4 rows, recomputed from plans the aids force: (x resident, warps per unit)
    where session 37's rule considers x resident (its staged rounds; one row only at k = 4), else (False, None). A
    candidate's critical path in items: the rounds of the 16-row tiles over the GPU's unit slots (CTAs per SM without
    the spread's padding x slots x SMs) times a warp's share of K's 256-column groups. x resident at the base's warps
    per unit (4, or 8 where K has 32 or more groups) or, only where at least 10% shorter than the base's, the shortest
    of 2, 4 and 8 at k = 4 and at k = 5 on 2-4 rows, 2 at other k (a later one only where strictly shorter; each fewer
    than K's groups); against x staged: at 2-4 rows by the warps per SM (the base where the candidate fits fewer and
    the base as many), at one row where the path is at least 10% shorter."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles, groups = (N + 15) // 16, (K + 255) // 256

    def forced(**values):
        with tuning_aids(gemv_split_cluster=0, gemv_spread=False, **values):
            return kbit._C._gemv_launch_plan(M, N, K, k)

    def path(p):
        w = p["warps_per_unit"]
        unit_slots = p["warps"] // w * p["ctas_per_sm"] * sms
        return -(-tiles // unit_slots) * -(-groups // w)

    staged = forced(gemv_x_resident=0)
    staged_ctas = staged["ctas_per_sm"] * sms
    reuse_pays = tiles >= 2 * staged_ctas or (groups >= 16 and 2 * tiles >= 3 * staged_ctas)
    if not ((M >= 2 and reuse_pays) or (M == 1 and k == 4 and tiles >= 3 * staged_ctas)):  # (as session 37's rule)
        return False, None
    base_w = min(8 if min(8, max(4, groups // 4)) >= 8 else 4, groups)
    base = forced(gemv_x_resident=2, gemv_unit_warps=base_w)
    assert base["x_resident"] and base["warps_per_unit"] == base_w, base
    best = base
    for w in (2, 4, 8) if k == 4 or (k == 5 and M >= 2) else (2,):
        if w != base_w and w < groups:
            c = forced(gemv_x_resident=2, gemv_unit_warps=w)
            if c["x_resident"] and path(c) < path(best):
                best = c
    if 10 * path(best) > 9 * path(base):
        best = base
    if M >= 2:
        def fits(p):
            return tiles > staged_ctas and p["warps"] * p["ctas_per_sm"] >= staged["warps"] * staged["ctas_per_sm"]
        if not fits(best) and fits(base):
            best = base
        reside = fits(best)
    else:
        reside = 10 * path(best) <= 9 * path(staged)
    return reside, best["warps_per_unit"] if reside else None


def test_gemv_decode_plan_by_path():
    # session 66's rule at 1-4 rows, k = 4, against its recomputation from forced plans, on shapes where it differs from
    # session 37's: K of 14 and 20 groups (Qwen2.5-7B, Qwen3-14B / 32B), Llama-3 8B's fused gate/up (3.4 rounds of the
    # 4-warp units), 57344 x 4096 (paths tie: x staged at one row), 7168 x 5120 (x staged: too few tiles), K of 8
    # groups (session 67: no 8-warp units there); at k = 2, 3 and 5 (session 67: k = 5 at 2-4 rows every candidate);
    # and with the aid at 0, session 37's (x staged at 4 rows on K = 5120, whose 5-warp units fit fewer warps per SM; at
    # 2 rows x resident in 5-warp CTAs)
    plan = kbit._C._gemv_launch_plan
    sizes = ((37888, 3584), (152064, 3584), (28672, 4096), (57344, 4096), (34816, 5120), (151936, 5120), (7168, 5120),
             (25600, 2048), (65536, 2048))
    for N, K in sizes:
        for M in (1, 2, 3, 4):
            p = plan(M, N, K, 4)
            reside, warps = _decode_plan_by_path(M, N, K)
            assert p["x_resident"] == reside and (not reside or p["warps_per_unit"] == warps), (N, K, M, p, warps)
    for k in (2, 3, 5):
        for N, K in ((152064, 3584), (151936, 5120), (37888, 3584), (28672, 4096), (25600, 2048)):
            for M in (1, 2, 4):
                p = plan(M, N, K, k)
                reside, warps = _decode_plan_by_path(M, N, K, k)
                assert p["x_resident"] == reside and (not reside or p["warps_per_unit"] == warps), (k, N, K, M, p)
                assert M >= 2 or not p["x_resident"], (k, N, K, M, p)  # (one row: x resident at k = 4 only)
    if _is_h100():  # (sm_90, 132 SMs: the GPUs runs 1-3 measured)
        want = {(1, 152064, 3584): (True, 2), (4, 152064, 3584): (True, 2), (1, 28672, 4096): (True, 8),
                (1, 57344, 4096): (False, None), (1, 34816, 5120): (False, None), (4, 34816, 5120): (True, 4),
                (4, 151936, 5120): (True, 4)}
        for (M, N, K), (reside, warps) in want.items():
            p = plan(M, N, K, 4)
            assert (p["x_resident"], p["warps_per_unit"] if reside else None) == (reside, warps), (M, N, K, p)
            with tuning_aids(gemv_decode_path_rule=0):
                old = plan(M, N, K, 4)
            # session 37's: x resident at one row at 4 warps per unit from three staged rounds (not on K = 5120, whose
            # 5-warp units fit fewer warps per SM than x staged), x staged at 4 rows on K = 5120
            assert old["x_resident"] == (K != 5120) and (not old["x_resident"] or old["warps_per_unit"] == 4), old
        # session 67 (run 1): k = 5 at 2-4 rows takes 8 warps a unit on 28672 x 4096 (40.76 us against 44.26 at 2, the
        # base 4 was 44.54); on 25600 x 2048 (8 groups) one row runs x staged, not 8 warps a unit of one group a warp
        # (10.70 against 12.72)
        for (M, N, K, k), (reside, warps) in {(2, 28672, 4096, 5): (True, 8), (4, 28672, 4096, 5): (True, 8),
                                              (1, 25600, 2048, 4): (False, None)}.items():
            p = plan(M, N, K, k)
            assert (p["x_resident"], p["warps_per_unit"] if reside else None) == (reside, warps), (M, N, K, k, p)
    with pytest.raises(RuntimeError, match="_set_gemv_decode_path_rule: rule must be 1 .* or 0 .*; got 2"):
        kbit._C._set_gemv_decode_path_rule(2)


def test_gemv_decode_x_resident_plan():
    # the rule: x resident at 2-4 rows where the staged grid takes the tiles in two or more rounds, or 1.5 where K has
    # 16 or more groups (staged CTAs from the plan with x staged), at the warps per unit that give each warp 4 of a
    # unit's groups (4 to 8); at 1 row only at k = 4 from three rounds (session 37); never under those rounds, or with
    # the aid at 0. At 5-8 rows (8 token slots) where x is resident, k <= 4: 4 warps per unit, 2 ring stages; 8 warps
    # per unit where K has 16 or more groups or the 4-warp CTAs sit unevenly on the SMs (session 47). At 9-16 rows, k =
    # 4 and 5: CTAs of at most 8 warps at 2 stages (session 47)
    plan = kbit._C._gemv_launch_plan
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    sizes = ((14336, 4096), (28672, 8192), (5120, 2048), (2048, 5120), (12800, 1024))
    fields, resident_16 = ("x_resident", "warps", "warps_per_unit", "ring_stages"), 0
    for k in KS:
        for N, K in sizes:
            for M in (1, 2, 3, 4):
                p = plan(M, N, K, k)
                prev = (kbit._C._set_gemv_x_resident(0), kbit._C._set_gemv_split_cluster(0))
                try:
                    staged = plan(M, N, K, k)  # (the plain x-staged kernel's CTAs per SM, as the rule counts them)
                finally:
                    kbit._C._set_gemv_x_resident(prev[0])
                    kbit._C._set_gemv_split_cluster(prev[1])
                assert not staged["x_resident"]
                tiles, staged_ctas, groups = (N + 15) // 16, staged["ctas_per_sm"] * sms, (K + 255) // 256
                reuse_pays = tiles >= 2 * staged_ctas or (groups >= 16 and 2 * tiles >= 3 * staged_ctas)
                considered = (M >= 2 and reuse_pays) or (M == 1 and k == 4 and tiles >= 3 * staged_ctas)
                if not considered:
                    assert not p["x_resident"], (k, N, K, M, p, staged)
                else:  # session 66's rule; then session 37's
                    reside, warps = _decode_plan_by_path(M, N, K, k)
                    assert p["x_resident"] == reside, (k, N, K, M, p, staged)
                    assert not reside or p["warps_per_unit"] == warps, (k, N, K, M, p, warps)
                    with tuning_aids(gemv_decode_path_rule=0):
                        p = plan(M, N, K, k)
                # (session 37's; elsewhere only where x resident fits at least as many warps per SM)
                if considered and _is_h100():
                    assert p["x_resident"], (k, N, K, M, p, staged)
                if p["x_resident"]:
                    assert p["warps_per_unit"] == min(8, max(4, groups // 4), groups) and p["split_cluster"] == 0
            for M in (9, 12, 16):  # 16 slots, one token chunk, k = 4 and 5: CTAs of at most 8 warps, 2 stages; k = 2,
                # 3: the chooser's CTA, as with x resident wherever it fits (mode 2, which takes no decode rule)
                p = plan(M, N, K, k)
                if p["x_resident"] and k >= 4:
                    assert p["token_slots"] == 16 and p["warps"] <= 8 and p["ring_stages"] == 2, (k, N, K, M, p)
                    resident_16 += 1
                elif p["x_resident"]:
                    prev = kbit._C._set_gemv_x_resident(2)
                    try:
                        anywhere = plan(M, N, K, k)
                    finally:
                        kbit._C._set_gemv_x_resident(prev)
                    assert [anywhere[f] for f in fields] == [p[f] for f in fields], (k, N, K, M, p, anywhere)
            for M in (5, 6, 8):
                p = plan(M, N, K, k)
                if p["x_resident"] and k <= 4:
                    groups = (K + 255) // 256
                    want = (min(8, groups),) if groups >= 16 else (min(4, groups), min(8, groups))
                    assert p["warps_per_unit"] in want and p["token_slots"] == 8, (k, N, K, M, p)
                    assert p["ring_stages"] == 2, (k, N, K, M, p)
    if _is_h100():  # (sm_90, 132 SMs: the H100 and H200 the rule was measured on)
        # 16 slots, k = 4: Qwen3 Q at M = 16 one 8-warp CTA of two 4-warp slots, where x resident anywhere (mode 2)
        # takes the chooser's 16-warp CTA
        assert resident_16 > 0
        prev = kbit._C._set_gemv_x_resident(2)
        try:
            q16_anywhere = plan(16, 4096, 2048, 4)
        finally:
            kbit._C._set_gemv_x_resident(prev)
        assert [plan(16, 4096, 2048, 4)[f] for f in fields] == [True, 8, 4, 2]
        assert [q16_anywhere[f] for f in fields] == [True, 16, 8, 2]
        # one row, k = 4: 70B gate/up (3.4 rounds) but not 8B (1.7); no other k
        assert plan(1, 28672, 8192, 4)["x_resident"] and not plan(1, 14336, 4096, 4)["x_resident"]
        assert not any(plan(1, N, K, k)["x_resident"] for k in (2, 3, 5) for N, K in sizes)
        for M in (2, 3, 4):
            assert all(plan(M, 28672, 8192, k)["x_resident"] for k in KS)  # 70B gate/up: 1792 tiles
            # 8B gate/up: 896 tiles on 396 staged CTAs at k = 4, on 528 (1.7 rounds, 16 groups) at k = 2, 3, 5
            assert all(plan(M, 14336, 4096, k)["x_resident"] for k in KS)
            assert not plan(M, 5120, 2048, 4)["x_resident"] and not plan(M, 2048, 5120, 4)["x_resident"]
        for M in (6, 8):  # 8 token slots, 2 stages: 8B gate/up (16 groups) two 8-warp slots, 70B one 8-warp unit;
            # Qwen3 gate/up (320 tiles: 160 CTAs of two 4-warp slots would run two to an SM on 28 SMs) two CTAs of one
            # 8-warp unit; GLM shared gate/up (640 tiles: 264 such CTAs, two on every SM) 4 warps
            for (N, K), want in (((14336, 4096), (16, 8, 1)), ((28672, 8192), (8, 8, 1)), ((5120, 2048), (8, 8, 2)),
                                 ((10240, 2048), (8, 4, 2))):
                p = plan(M, N, K, 4)
                assert (p["x_resident"], p["warps"], p["warps_per_unit"], p["ring_stages"], p["ctas_per_sm"]) == \
                    (True, *want[:2], 2, want[2]), (N, K, M, p)
    # the aids override the 8- and 16-slot rules' warps and stages (the rule's own x-resident decision, mode 1; 8B
    # gate/up at M = 8 takes 8 warps per unit and 2 stages by the rule, Qwen3 Q at M = 16 2 stages)
    for aid, value, field, M, N, K in ((kbit._C._set_gemv_resident_stages, 3, "ring_stages", 8, 14336, 4096),
                                       (kbit._C._set_gemv_unit_warps, 4, "warps_per_unit", 8, 14336, 4096),
                                       (kbit._C._set_gemv_resident_stages, 3, "ring_stages", 16, 4096, 2048)):
        prev = aid(value)
        try:
            p = plan(M, N, K, 4)
        finally:
            aid(prev)
        assert (p["x_resident"] or not _is_h100()) and (not p["x_resident"] or p[field] == value), (field, p)
    prev = kbit._C._set_gemv_x_resident(0)
    try:
        assert not any(plan(M, 28672, 8192, 4)["x_resident"] for M in (2, 3, 4))
    finally:
        kbit._C._set_gemv_x_resident(prev)


XRES_NK = [(17, 96), (4801, 2080), (12000, 1024), (33, 4352)]  # the x-resident tests' weights (N, K)


def _staged_and_resident(fn, x, M, nk, k, before_resident=lambda: None, then=lambda: None):
    """(fn(x) with x staged, then after before_resident() fn(x) and then() with x resident), all at 4
    warps per unit (the cross-warp sum's order depends on the warps per unit; x resident may run
    several unit slots per CTA). Skips where this GPU's shared memory cannot hold x resident at the
    staged plan's warps (never on the H100)."""
    prev_w = kbit._C._set_gemv_unit_warps(4)
    prev_mode = kbit._C._set_gemv_x_resident(0)
    try:
        staged, p_staged = fn(x), kbit._C._gemv_launch_plan(M, *nk, k)
        assert p_staged["x_resident"] is False
        kbit._C._set_gemv_x_resident(2)
        p_res = kbit._C._gemv_launch_plan(M, *nk, k)
        if not _is_h100() and (not p_res["x_resident"] or p_res["warps_per_unit"] != p_staged["warps_per_unit"]):
            pytest.skip("x resident does not fit this GPU's shared memory at the staged plan's warps")
        assert p_staged["warps"] == p_staged["warps_per_unit"]
        assert p_res["x_resident"] and p_res["warps_per_unit"] == p_staged["warps"] == min(4, (nk[1] + 255) // 256)
        before_resident()
        return staged, fn(x), then()
    finally:
        kbit._C._set_gemv_x_resident(prev_mode)
        kbit._C._set_gemv_unit_warps(prev_w)


@pytest.mark.parametrize("M", [1, 3, 8, 13, 16])
@pytest.mark.parametrize("nk", XRES_NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_x_resident_keeps_the_bits(k, dtype, nk, M, poisoned_cuda):
    # x resident (each warp copies its groups of x once; codes-only rings of 2-4 stages) against x staged
    # with the codes: the same bits at the same warps per unit, and the reference. A partial group (96),
    # a K tail and 301 tiles (4801 x 2080: CTAs loop over units, warp 0 taking three of the nine
    # groups), 750 tiles, several groups per warp (17 groups on 4 warps). A NaN call first: x slots past
    # M are never copied, and stale slots must reach only D columns that are never stored.
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-xres")
    fn = _mma_gemv(qw, k)
    nan_first = lambda: fn(torch.full((16, nk[1]), float("nan"), device=DEV, dtype=dtype))  # noqa: E731
    staged, resident, again = _staged_and_resident(fn, x, M, nk, k, nan_first, lambda: check_call(fn, x, W_hat, dtype))
    assert_bitwise_equal(resident, staged)
    assert_bitwise_equal(again, resident)


@pytest.mark.parametrize("M", [8, 16])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemv_x_resident_ring_stages_keep_the_bits(dtype, M, poisoned_cuda):
    # x-resident CTAs as the launcher builds them (on the H100 at 4801 x 4352: four 4-warp unit slots
    # and 3 stages at M = 8, 8 warps and 2 stages at M = 16) and with the ring depth forced to 2, 3 and 4
    # (_set_gemv_resident_stages; a depth that does not fit the warps takes fewer warps): the depth
    # changes when codes are copied, not the arithmetic, and the slots which units run side by side,
    # so plans with the same warps per unit give the same bits; every one matches the reference. 17
    # groups (4 warps: warp 0 takes five), 301 tiles.
    k, nk = 4, (4801, 4352)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-stages")
    fn = _mma_gemv(qw, k)
    prev_mode, prev_stages = kbit._C._set_gemv_x_resident(2), kbit._C._set_gemv_resident_stages(0)
    by_warps, plans = {}, []
    try:
        for stages in (0, 2, 3, 4):
            kbit._C._set_gemv_resident_stages(stages)
            p = kbit._C._gemv_launch_plan(M, *nk, k)
            assert p["x_resident"] and (stages == 0 or p["ring_stages"] == stages)
            plans.append((p["warps_per_unit"], p["warps"], p["ring_stages"]))
            y = check_call(fn, x, W_hat, dtype)
            if p["warps_per_unit"] in by_warps:
                assert_bitwise_equal(y, by_warps[p["warps_per_unit"]])
            by_warps.setdefault(p["warps_per_unit"], y)
    finally:
        kbit._C._set_gemv_x_resident(prev_mode)
        kbit._C._set_gemv_resident_stages(prev_stages)
    if _is_h100():
        assert plans == ([(4, 16, 3), (4, 16, 2), (4, 16, 3), (8, 8, 4)] if M == 8 else
                         [(8, 8, 2), (8, 8, 2), (4, 4, 3), (4, 4, 4)])


@pytest.mark.parametrize("M", [8, 16, 40])
@pytest.mark.parametrize("nk", XRES_NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4, 5])
def test_gemv_x_resident_unit_slots_keep_the_bits(k, dtype, nk, M, poisoned_cuda):
    # dense x-resident CTAs of several unit slots (each slot its own units over the CTA's one pair table
    # and x image, every warp copying a share of the image) against one slot (_set_gemv_max_unit_slots):
    # the same bits at the same warps per unit, and the reference. 17 x 96 (two tiles: with 4 slots
    # two slots have no unit), 33 x 4352 (three tiles: slots without a unit still copy their share of
    # the x image), 301 tiles (slots take different counts), partial groups and chunks (M = 40: three
    # chunks, the last of 8 rows); a NaN call first (stale x slots).
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-xres-slots")
    fn = _mma_gemv(qw, k)
    prev_w, prev_mode = kbit._C._set_gemv_unit_warps(4), kbit._C._set_gemv_x_resident(2)
    try:
        slotted = kbit._C._gemv_launch_plan(M, *nk, k)
        fn(torch.full((64, nk[1]), float("nan"), device=DEV, dtype=dtype))
        y = check_call(fn, x, W_hat, dtype)
        prev_slots = kbit._C._set_gemv_max_unit_slots(1)
        try:
            single = kbit._C._gemv_launch_plan(M, *nk, k)
            y_single = fn(x)
        finally:
            kbit._C._set_gemv_max_unit_slots(prev_slots)
    finally:
        kbit._C._set_gemv_x_resident(prev_mode)
        kbit._C._set_gemv_unit_warps(prev_w)
    assert slotted["x_resident"] and single["x_resident"]
    assert slotted["warps_per_unit"] == single["warps_per_unit"] == single["warps"] == min(4, (nk[1] + 255) // 256)
    assert slotted["warps"] % slotted["warps_per_unit"] == 0 and slotted["warps"] // slotted["warps_per_unit"] in (1, 2, 4)
    if _is_h100() and k == 4:  # (sharing the 32 KB table and the x image buys warps per SM)
        assert slotted["warps"] > slotted["warps_per_unit"]
    assert_bitwise_equal(y_single, y)


@pytest.mark.parametrize("M", [17, 24, 32, 45, 64, 97, 128])
@pytest.mark.parametrize("nk", XRES_NK, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemv_token_chunks(k, dtype, nk, M, poisoned_cuda):
    # dense M past 16: units (tile, chunk of 16 rows), each CTA keeping one chunk (a partial last chunk
    # at 17, 24, 45, 97; 17 groups on 4 warps at K = 4352); x resident and staged give the same bits at the
    # same warps per unit; a NaN call first (stale x slots); graph replay with other x; rows reversed
    # give the rows reversed (each row its own mma column)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "gemv-chunks")
    fn = _mma_gemv(qw, k)
    fn(torch.full((128, nk[1]), float("nan"), device=DEV, dtype=dtype))
    y = check_call(fn, x, W_hat, dtype)
    assert_bitwise_equal(fn(x), y)
    check_graph_replay(fn, [x.clone()], [acts(M, nk[1], dtype, "gemv-chunks-b")])
    staged, resident, reversed_rows = _staged_and_resident(fn, x, M, nk, k, then=lambda: fn(x.flip(0).contiguous()))
    assert_bitwise_equal(resident, staged)
    assert_bitwise_equal(reversed_rows, staged.flip(0))


@pytest.mark.parametrize("k", KS)
def test_gemv_gemm_user_codebook_graph_and_limit(k, gen):
    # a user codebook (every entry looked up: lane registers or the pair table), CUDA-graph
    # replay, M > 4 and an unknown decode refused
    cb = random_codebook(k, gen)
    W = make_weight("normal", (77, 1056), torch.float16, gen=gen)
    qw = kbit.quantize(W, k=k, codebook=cb)
    flat = qw.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    qw = qw.to(DEV)
    x = acts(3, 1056, torch.float16, "gemv-cb")
    fn = lambda xx: torch.ops.kbit.gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)  # noqa: E731
    check(fn(x), x, W_hat, torch.float16)
    check_graph_replay(fn, [x.clone()], [acts(3, 1056, torch.float16, "gemv-cb2")])
    by_decode = {}
    for decode in ("shuffle", "mma", "auto"):
        by_decode[decode] = torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k, decode)
        check(by_decode[decode], x, W_hat, torch.float16)
    # the argument reaches the kernel: the decodes round differently (fp32 codebook vs the table in
    # fp16), and 'auto' is the mma decode for dense weights
    assert not torch.equal(by_decode["shuffle"], by_decode["mma"])
    assert_bitwise_equal(by_decode["auto"], by_decode["mma"])
    with pytest.raises(RuntimeError, match="gemv_gemm takes at most 128 rows of x .*got M=129"):
        torch.ops.kbit.gemv_gemm(acts(129, 1056, torch.float16, "gemv-129"), qw.packed, qw.absmax, qw.row_scale,
                                 qw.codebook, k)
    with pytest.raises(RuntimeError, match="decode='shuffle' takes at most 4 rows of x; got M=5"):
        torch.ops.kbit.gemv_gemm(acts(5, 1056, torch.float16, "gemv-5"), qw.packed, qw.absmax, qw.row_scale,
                                 qw.codebook, k, "shuffle")
    x12 = acts(12, 1056, torch.float16, "gemv-12")
    fn12 = lambda xx: torch.ops.kbit.gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)  # noqa: E731
    check(fn12(x12), x12, W_hat, torch.float16)
    check_graph_replay(fn12, [x12.clone()], [acts(12, 1056, torch.float16, "gemv-12b")])
    with pytest.raises(RuntimeError, match="gemv_gemm: decode must be 'auto', 'mma' or 'shuffle'.*got 'fast'"):
        torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k, "fast")


@pytest.mark.parametrize("wpu", [1, 2, 4, 8])
@pytest.mark.parametrize("M", [1, 3, 8, 9, 16, 33])
@pytest.mark.parametrize("nk", [(257, 5120), (4100, 2080), (33, 2080)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("k", KS)
def test_mma_gemm_forced_warps_per_unit(k, nk, M, wpu, poisoned_cuda):
    # mma_gemm's tuning argument (what tune_dispatch sweeps and the dispatch table then picks):
    # every warps-per-unit value computes x @ W^T, with its own K splits (257 x 5120: 20 groups
    # shared by 1-8 warps and several CTAs) and a K tail (2080: 9 groups, one of 32 columns)
    qw, W_hat = weight(k, *nk, torch.float16)
    x = acts(M, nk[1], torch.float16, "wpu")
    args = (x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    y = torch.ops.kbit.mma_gemm(*args, wpu)
    check(y, x, W_hat, torch.float16)
    assert_bitwise_equal(torch.ops.kbit.mma_gemm(*args, wpu), y)


def test_mma_gemm_rejects_bad_warps_per_unit():
    qw, _ = weight(4, 33, 288)  # 2 groups of 256 columns: at most 2 warps per unit
    x = acts(2, 288, torch.float16, "wpu-bad")
    args = (x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    for bad in (3, 16, -1):
        with pytest.raises(RuntimeError, match="warps_per_unit must be 0 .* 1, 2, 4 or 8; got " + str(bad)):
            torch.ops.kbit.mma_gemm(*args, bad)
    with pytest.raises(RuntimeError, match="warps_per_unit=4 exceeds 2 for K=288"):
        torch.ops.kbit.mma_gemm(*args, 4)
    check(torch.ops.kbit.mma_gemm(*args, 2), x, weight(4, 33, 288)[1], torch.float16)


@pytest.mark.parametrize("op", ["tile_gemm", "wgmma_gemm"])
@pytest.mark.parametrize("M", [16, 32, 64, 128])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_tile_gemm_one_block_row(op, k, dtype, M, poisoned_cuda):
    # one weight row of one block: every output uses the same 32 weights, so their rounding
    # errors do not average out (k = 2: two magnitudes). A bf16 pair table times a bf16 scale
    # (two bf16 roundings) measured 4.3e-3 here at k = 2, M = 32, past the bf16 bound. (M >= 16:
    # with one or two outputs, a single cancelling dot product decides a relative error.)
    skip_unless_runs(op, k, M)
    qw, W_hat = weight(k, 1, 32, dtype)
    x = acts(M, 32, dtype, "tile1row")
    check(getattr(torch.ops.kbit, op)(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k), x, W_hat, dtype)


@pytest.mark.parametrize("M", [0, 1, 5, 16, 33, 200])
@pytest.mark.parametrize("nk", [(17, 96), (257, 5120), (33, 2080), (6, 32), (40, 16384)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 5])
def test_dequant_cublas_gemm_any_m(k, dtype, nk, M, poisoned_cuda):
    # the dequantize + cuBLAS path itself at every M (gemm takes it only past the crossover): unscaled dequantize,
    # fp32 cuBLAS product, the column-scale epilogue (N % 4 == 0 or not); K = 16384 in bf16: split-K partial sums must
    # stay in fp32 (4e-3); x left as it was
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "dqcublas")
    x_before = x.clone()
    y = torch.ops.kbit.dequant_cublas_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(x, x_before)


def rows_of_three_magnitudes(dtype, N, K, seed):
    """A float32 weight whose rows n % 3 == 0 have row scales past the fallback's cap for dtype (fp16: values ~2^24,
    row scales 2^17-2^19 past 2^8; bf16: values up to 3.35e38, row scale 2^121 past 1), n % 3 == 1 ordinary
    (N(0, 1)), n % 3 == 2 small (~2^-12: their fp16 values are ~1/4 subnormal)."""
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(N, K, generator=g)
    if dtype == torch.float16:
        W[0::3] *= 2.0 ** 24
    else:
        W[0::3] = (torch.rand(len(range(0, N, 3)), K, generator=g) * 2 - 1) * 3.3e38
        W[0::3, 5] = 3.35e38  # the row's largest: row scale 2^121
    W[2::3] *= 2.0 ** -12
    return W


@pytest.mark.parametrize("M", [1, 37, 200])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4])
def test_dequant_cublas_gemm_rows_past_dtype_range(k, dtype, M, poisoned_cuda):
    # The fallback dequantizes W into x's dtype with row scales capped (fp16 2^8, bf16 1) and multiplies the capped
    # rows' outputs back after cuBLAS. N = 300: two epilogue CTAs of 256 columns, each with capped and uncapped
    # columns, and 66 row slices on 132 SMs (M = 200: each CTA goes down several rows). Call 1, x tiny: the large
    # rows' outputs are in range and must match; call 2, x ~ N(0, 1) but row 0 scaled into the large rows' range:
    # the other rows' outputs must match, and the large rows' overflow to Inf of the reference's sign (no NaN: the
    # capped fp32 sums stay bounded as the kernels' that scale after the sum do), finite where in range.
    N, K = 300, 96
    qh = kbit.quantize(rows_of_three_magnitudes(dtype, N, K, seed_for(f"dq-range-{k}-{dtype}")), k=k)
    flat = qh.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    rs = flat.row_scale
    cap = 2.0 ** 8 if dtype == torch.float16 else 1.0
    assert bool((rs[0::3] > cap).all()) and bool((rs[1::3] <= cap).all()) and bool((rs[2::3] <= cap).all())
    qw = qh.to(DEV)
    largest = torch.finfo(dtype).max
    tiny = 2.0 ** -16 if dtype == torch.float16 else 2.0 ** -120
    for x_scale, cols in ((tiny, slice(0, None, 3)), (1.0, slice(1, None, 3)), (1.0, slice(2, None, 3))):
        x = acts(M, K, torch.float32, "dq-range") * x_scale
        if x_scale == 1.0 and M > 1:
            x[0] *= 2.0 ** -20 if dtype == torch.float16 else 2.0 ** -126
        x = x.to(dtype)
        y = torch.ops.kbit.dequant_cublas_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
        ref = x.double() @ W_hat[cols].T
        err = float((y[:, cols].double() - ref).norm() / ref.norm())
        assert err <= GEMM_RTOL[dtype], (x_scale, cols, err)
        if x_scale == 1.0:
            big, got = x.double() @ W_hat[0::3].T, y[:, 0::3].double()
            # away from the dtype's largest value by the elementwise error bound: W rounded to the dtype (eps each)
            # in a sum whose terms can cancel (run 6: at M = 200 outputs within 1% of it fell on the other side)
            eps = torch.finfo(dtype).eps
            margin = 2 * eps * (x.double().abs() @ W_hat[0::3].abs().T) + eps * largest
            over, within = big.abs() > largest + margin, big.abs() < largest - margin
            assert bool(over.any()) and bool(torch.isinf(got[over]).all())
            assert torch.equal(torch.sign(got[over]), torch.sign(big[over]))
            assert (bool(within.any()) or M == 1) and bool(torch.isfinite(got[within]).all())


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemm_dequant_cublas_past_expert_limit(dtype, poisoned_cuda):
    # more experts than the grouped kernels take (1024): dequantize + cuBLAS per expert with rows (a host sync);
    # N = 33: experts' output rows start at odd element offsets
    E, N, K = 1025, 33, 64
    qw, W_hat = weight(2, N, K, dtype, E=E)
    counts = [0] * E
    counts[0], counts[3], counts[700], counts[1024] = 3, 1, 17, 5
    x = acts(sum(counts), K, dtype, "dq-grouped")
    assert kbit._C.grouped_gemm_dispatch(sum(counts), E, N, K, 2)[0] == "dequant_cublas"
    check_grouped(qw, W_hat, x, counts, dtype)


def test_grouped_mma_gemm_matches_grouped_gemm_and_limits_experts(poisoned_cuda):
    E, N, K = 8, 40, 288
    qw, W_hat = weight(4, N, K, torch.float16, E=E)
    off = offsets([3, 0, 0, 70, 1, 0, 2, 0])
    x = acts(76, K, torch.float16, "gmma")
    y = torch.ops.kbit.grouped_mma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4)
    assert_bitwise_equal(y, kbit.grouped_gemm(x, qw, off))
    big, _ = weight(2, 16, 32, torch.float16, E=1025)
    off = torch.zeros(1026, dtype=torch.int32, device=DEV)
    for op in (torch.ops.kbit.grouped_gemv_gemm, torch.ops.kbit.grouped_mma_gemm, torch.ops.kbit.grouped_tile_gemm):
        with pytest.raises(RuntimeError, match="at most 1024 experts"):
            op(x[:0, :32], big.packed, big.absmax, big.row_scale, big.codebook, off, 2)


@pytest.mark.parametrize("k", KS)
def test_gemm_cuda_user_codebook(k, gen):
    cb = random_codebook(k, gen)
    W = make_weight("normal", (300, 1024), torch.bfloat16, gen=gen)
    qw = kbit.quantize(W.to(DEV), k=k, codebook=cb)
    flat = qw.to_layout("flat").cpu()
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    x = acts(37, 1024, torch.bfloat16, "cb")
    check(kbit.gemm(x, qw), x, W_hat, torch.bfloat16)


@pytest.mark.parametrize("kind", ["outlier_row", "subnormal_blocks", "zero_blocks", "mixed_rows"])
def test_gemm_cuda_adversarial_weights(kind, gen):
    W = make_weight(kind, (300, 1024), torch.float32, gen=gen)
    if kind == "mixed_rows":
        W = W / W.abs().amax(-1, keepdim=True)
    qh = kbit.quantize(W, k=4)
    flat = qh.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    x = acts(256, 1024, torch.bfloat16, kind)
    y = kbit.gemm(x, qh.to(DEV)).double()
    ref = x.double() @ W_hat.T
    assert torch.isfinite(y).all()
    nz = ref.norm(dim=0) > 0
    err = (y - ref).norm(dim=0)[nz] / ref.norm(dim=0)[nz]
    assert (err <= GEMM_RTOL[torch.bfloat16]).all(), err.max()
    assert (y[:, ~nz] == 0).all()


def test_gemm_cuda_weights_beyond_fp16_range(gen):
    # fp32 weights up to ~1e6 (beyond fp16's 65504) with small fp16 activations: the product
    # fits fp16 though the weights do not, so the result must be finite and accurate
    W = make_weight("normal", (64, 512), torch.float32, gen=gen)
    W[::3] *= 3e5
    qh = kbit.quantize(W, k=4)
    flat = qh.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    for M in (1, 32, 200):  # tensor-core kernel and dequantize + cuBLAS
        x = (acts(M, 512, torch.float16, "range").float() * 1e-3).half()
        y = kbit.gemm(x, qh.to(DEV))
        ref = x.double() @ W_hat.T
        assert ref.abs().max() < 60000
        assert torch.isfinite(y).all(), M
        check(y, x, W_hat, torch.float16)
        if M >= 32:  # per output column (rows 3e5x apart): needs enough rows to not be ~0
            err = (y.double() - ref).norm(dim=0) / ref.norm(dim=0)
            assert (err <= GEMM_RTOL[torch.float16]).all(), (M, err.max())


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemm_cuda_leading_dims_and_strides(dtype):
    qw, W_hat = weight(3, 257, 5120, dtype)
    x = acts(24, 5120, dtype, "lead")
    y = kbit.gemm(x.view(2, 3, 4, 5120), qw)
    assert y.shape == (2, 3, 4, 257)
    assert_bitwise_equal(y.reshape(24, 257), kbit.gemm(x, qw))
    xt = x.t().contiguous().t()  # same values, column-major
    assert not xt.is_contiguous()
    assert_bitwise_equal(kbit.gemm(xt, qw), kbit.gemm(x, qw))
    check(kbit.gemm(x[::2], qw), x[::2], W_hat, dtype)  # row-strided view


@pytest.mark.parametrize("M", [1, 16, 128, 256])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_gemm_cuda_deterministic(dtype, M):
    qw, _ = weight(4, 4097, 5120, dtype)
    x = acts(M, 5120, dtype, "det")
    y0 = kbit.gemm(x, qw)
    for _ in range(5):
        assert_bitwise_equal(kbit.gemm(x, qw), y0)


def test_gemm_cuda_on_side_stream():
    qw, _ = weight(5, 257, 5120)
    x = acts(64, 5120, torch.float16, "stream")
    want = kbit.gemm(x, qw)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x2 = x * 1  # produced on the side stream
        y = kbit.gemm(x2, qw)
    torch.cuda.current_stream().wait_stream(s)
    assert_bitwise_equal(y, want)


def test_gemm_cuda_concurrent_streams():
    # four streams at once, dense and grouped, each call's workspace on its own stream
    qw, _ = weight(4, 257, 5120)
    qe, _ = weight(3, 40, 288, E=8)
    xs = [acts(m, 5120, torch.float16, f"cs{m}") for m in (1, 7, 24, 100)]
    xg = acts(30, 288, torch.float16, "csg")
    off = offsets([4, 0, 9, 1, 0, 6, 10, 0])
    want = [kbit.gemm(x, qw) for x in xs] + [kbit.grouped_gemm(xg, qe, off)]
    streams = [torch.cuda.Stream() for _ in range(4)]
    got = []
    for _ in range(3):
        for s in streams:
            s.wait_stream(torch.cuda.current_stream())
        outs = []
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                outs.append(kbit.gemm(xs[i], qw))
                if i == 0:
                    outs.append(kbit.grouped_gemm(xg, qe, off))
        for s in streams:
            torch.cuda.current_stream().wait_stream(s)
        got = [outs[0], outs[2], outs[3], outs[4], outs[1]]
        for g, w in zip(got, want):
            assert_bitwise_equal(g, w)


def test_gemm_cuda_misaligned_activation_storage():
    # a contiguous view starting one element into its storage (2-byte aligned): the kernel's
    # 16-byte loads need a copy, which gemm makes; the result must not change
    qw, W_hat = weight(4, 33, 512)
    buf = acts(1, 8 * 512 + 1, torch.float16, "misal").view(-1)
    x = buf[1:].view(8, 512)
    assert x.is_contiguous() and x.data_ptr() % 16 != 0
    y = kbit.gemm(x, qw)
    check(y, x, W_hat, torch.float16)
    assert_bitwise_equal(y, kbit.gemm(x.clone(), qw))
    assert_bitwise_equal(torch.ops.kbit.mma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4),
                         kbit.gemm(x.clone(), qw))


@pytest.mark.parametrize("M", [257, 384, 513, 1000, 1024, 1025, 2048, 4097])
@pytest.mark.parametrize("nk", [(257, 5120), (4097, 96)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_gemm_cuda_prefill_m(k, dtype, nk, M, poisoned_cuda):
    # prefill chunks: on the H100 the table (session 25) sends M up to 1024 (k = 2 on KV-size weights such
    # as these: 768; k = 5: 384-1024 by shape) to the wgmma kernel (token chunks of up to 128, the last one
    # partial), dequantize + cuBLAS above; the H200's (session 38, its grid to M = 4096) sends KV-size
    # weights to wgmma up to 4096 at every k (so M = 2048 runs wgmma there and 4097, one past the grid,
    # dequantize + cuBLAS); on any GPU with a table, gemm follows its row; gemm matches the reference and,
    # bit for bit, the kernel it names
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "prefill")
    y = check_call(lambda x: kbit.gemm(x, qw), x, W_hat, dtype)
    bf16 = dtype == torch.bfloat16
    path, source = kbit._C.gemm_dispatch(M, *nk, k, dtype="bfloat16" if bf16 else "float16")
    if source != "heuristic" and kbit._C.wgmma_gemm_runs(k, M):  # the table's wgmma range, then the fallback
        row = _table_row(_tables()[source]["rows"], *nk)
        end = row["max_tile_m_bf16"][k - 2] if bf16 and row["max_tile_m_bf16"][k - 2] else row["max_tile_m"][k - 2]
        start, top = row["min_wgmma_m"][k - 2], max(end, row["max_kernel_m"][k - 2])
        if start and M >= start:
            assert path == ("wgmma" if M <= top else "dequant_cublas"), (M, path, top)
        if source == "NVIDIA H100 80GB HBM3" and k in (3, 4):
            assert path == ("wgmma" if M <= 1024 else "dequant_cublas"), (M, path)
    op = getattr(torch.ops.kbit, OP_OF_PATH[path])
    assert_bitwise_equal(op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k), y)


@pytest.mark.parametrize("M", [1, 16, 100])
@pytest.mark.parametrize("k", KS)
def test_gemm_cuda_graph(k, M):
    qw, _ = weight(k, 257, 5120)
    x0 = acts(M, 5120, torch.float16, "g0")
    x1 = acts(M, 5120, torch.float16, "g1")
    check_graph_replay(lambda x: kbit.gemm(x, qw), [x0.clone()], [x1])


@pytest.mark.parametrize("splits", [1, 2, 3, 5, 7, 8])
@pytest.mark.parametrize("M,tokens", [(5, 0), (16, 0), (20, 0), (40, 0), (130, 80), (130, 96), (130, 112), (200, 128),
                                      (200, 144), (200, 160)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("nk", [(300, 2080), (17, 96)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4])
def test_wgmma_gemm_forced_splits(k, dtype, nk, M, tokens, splits, poisoned_cuda):
    # each cluster size of the wgmma kernel's split-K (a tile's splits add their partials through
    # distributed shared memory, each reducing a slice): 300 rows (a partly filled second row block),
    # K = 2080 (a 32-column tail: its last group's x panel 0 half outside x, panels 1-3 wholly, read as
    # zeros by the tensor copies; 1 split: 9 groups, more than the stages, so stages are refilled),
    # K = 96 (one group, one panel partly outside x: any forced splits run as 1), tokens past M in chunks
    # of 16, 32, 64 (the rule's; M = 40: either CTA shape, wgmma_plan's) and 80, 96, 112, 128, 144, 160 (forced: two
    # warpgroups, two chunks; 144 and 160: the consumers on the producers' registers, setmaxnreg); the same bits on a
    # rerun
    skip_unless_runs("wgmma_gemm", k, M)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "wgsplit")
    op = torch.ops.kbit.wgmma_gemm
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    plan, y, again = wgmma_under({"wgmma_splits": splits, "wgmma_tokens": tokens},
                                 lambda: (kbit._C._wgmma_launch_plan(M, *nk, k), op(x, *args), op(x.clone(), *args)))
    assert tokens == 0 or plan["tokens"] == tokens, plan
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)


def wgmma_under(aids, fn):
    """fn() and kbit._C._wgmma_launch_plan's answer inside it, under the tuning aids `aids` ({name: value},
    kbit._C._set_<name>); all restored after."""
    setters = {name: getattr(kbit._C, f"_set_{name}") for name in aids}
    previous = {name: setters[name](value) for name, value in aids.items()}
    try:
        return fn()
    finally:
        for name, value in previous.items():
            setters[name](value)


def wgmma_plan_runs(x, qw, k, tag):
    """A function of no arguments that runs wgmma_gemm on x twice and in a graph replay (new x, `tag`-replay) under
    the tuning aids then set: (its plan with _M, y, y again)."""
    M, K = x.shape
    N = qw.shape[0]
    op = torch.ops.kbit.wgmma_gemm
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)

    def run():
        plan = dict(kbit._C._wgmma_launch_plan(M, N, K, k), _M=M)
        y = op(x, *args)
        again = op(x.clone(), *args)
        check_graph_replay(lambda xx: op(xx, *args), [x.clone()], [acts(M, K, x.dtype, f"{tag}-replay")])
        return plan, y, again

    return run


def unit_slices(plan, unit, N):
    """y's (tokens, rows) of output tile `unit` (row block x token chunk, chunk fastest) of a wgmma plan."""
    chunks = -(-plan["_M"] // plan["tokens"])
    row_block, chunk = divmod(unit, chunks)
    rows = 16 * plan["row_tiles"]
    return (slice(chunk * plan["tokens"], (chunk + 1) * plan["tokens"]),
            slice(row_block * rows, min((row_block + 1) * rows, N)))


@pytest.mark.parametrize("whole_clusters", [1, 2, 1000])
@pytest.mark.parametrize("splits", [2, 3, 8])
@pytest.mark.parametrize("M,tokens", [(40, 0), (130, 112), (150, 96), (200, 128), (300, 80), (300, 144), (300, 160)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4, 5])
def test_wgmma_gemm_split_tail(k, dtype, M, tokens, splits, whole_clusters, poisoned_cuda):
    # the split tail (kbit._C._set_wgmma_whole_clusters): the first clusters run `splits` whole units each (all of K,
    # one CTA a unit), the units after them split along K. 520 rows (5 row blocks of 128, the last of 8 rows; 3 of 256
    # at M = 40), K = 2080 (9 groups, a 32-column tail), token chunks of 64 (the rule's) or 80-160 (forced,
    # the same in the three calls) with tokens past M: 3-20 units, so some whole units and some split ones, or every
    # unit whole (1000 clusters, clamped). Each whole unit's outputs are bitwise the unsplit call's, each split unit's
    # the call with every unit split (the same sums in the same order, whatever CTA shape each call's rule takes at M =
    # 40); the plan counts its CTAs; the same bits on a rerun and a graph replay.
    skip_unless_runs("wgmma_gemm", k, M)
    N, K = 520, 2080
    qw, W_hat = weight(k, N, K, dtype)
    x = acts(M, K, dtype, "wgtail")
    run = wgmma_plan_runs(x, qw, k, "wgtail")
    chunk = {"wgmma_tokens": tokens}
    plan, y, again = wgmma_under({**chunk, "wgmma_splits": splits, "wgmma_whole_clusters": whole_clusters}, run)
    plan_split, y_split, _ = wgmma_under({**chunk, "wgmma_splits": splits, "wgmma_whole_clusters": 0}, run)
    plan_whole, y_whole, _ = wgmma_under({**chunk, "wgmma_splits": 1}, run)
    assert tokens == 0 or plan["tokens"] == plan_split["tokens"] == plan_whole["tokens"] == tokens, plan
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)
    units, whole = plan["units"], plan["whole_units"]
    assert plan["splits"] == splits and plan_split["whole_units"] == 0
    assert plan_whole["whole_units"] == plan_whole["units"]
    assert whole == min(whole_clusters, units // splits) * splits, plan
    assert plan["ctas"] == whole + (units - whole) * splits, plan
    for unit in range(units):
        tok, rows = unit_slices(plan, unit, N)
        want = (y_whole if unit < whole else y_split)[tok, rows]
        assert_bitwise_equal(y[tok, rows], want, f"unit {unit} of {units} ({whole} whole)")


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_wgmma_rule_split_tail_runs(dtype, poisoned_cuda):
    # the rule's own tail on a 132-SM GPU (Qwen3 gate/up at M = 512: 160 units, a full wave of them whole and the
    # rest split): against the reference, bitwise the same plan forced through the aids, and kbit.gemm bitwise the
    # op gemm_dispatch names; on other GPUs whatever the rule picks, against the reference
    M, N, K = 512, 5120, 2048
    skip_unless_runs("wgmma_gemm", 4, M)
    qw, W_hat = weight(4, N, K, dtype)
    x = acts(M, K, dtype, "wgruletail")
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    plan = kbit._C._wgmma_launch_plan(M, N, K, 4)
    y = torch.ops.kbit.wgmma_gemm(x, *args)
    check(y, x, W_hat, dtype)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert plan["splits"] > 1 and 0 < plan["whole_units"] < plan["units"], plan
    if plan["splits"] > 1:
        forced = {"wgmma_splits": plan["splits"], "wgmma_whole_clusters": plan["whole_units"] // plan["splits"]}
        again = wgmma_under(forced, lambda: (kbit._C._wgmma_launch_plan(M, N, K, 4),
                                             torch.ops.kbit.wgmma_gemm(x, *args)))
        assert again[0] == plan
        assert_bitwise_equal(again[1], y)
    name = "bfloat16" if dtype == torch.bfloat16 else "float16"
    op = getattr(torch.ops.kbit, OP_OF_PATH[kbit._C.gemm_dispatch(M, N, K, 4, dtype=name)[0]])
    assert_bitwise_equal(kbit.gemm(x, qw), op(x, *args))


def test_wgmma_split_tail_rule():
    # the split model with the tail (the rule): a partial last wave of units splits and the full waves before it run
    # whole, in whole clusters; where the units fill no wave, every unit splits as before; the aid's 0 gives the model
    # without the tail, a count that many clusters; bad values raise
    if not kbit._C.wgmma_gemm_runs(4, 512):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan
    for M, N, K in ((512, 5120, 2048), (768, 4096, 2048), (768, 14336, 4096), (384, 5120, 2048), (1024, 4096, 2048),
                    (128, 2048, 5120)):
        p = plan(M, N, K, 4)
        assert 0 <= p["whole_units"] <= p["units"], p
        if p["splits"] == 1:
            assert p["whole_units"] == p["units"] and p["ctas"] == p["units"], p
            continue
        at_once = p["splits"] * p["resident_clusters"]
        assert p["whole_units"] % at_once == 0 and p["units"] - p["whole_units"] < at_once, (M, N, K, p)
        assert p["ctas"] == p["whole_units"] + (p["units"] - p["whole_units"]) * p["splits"], p
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:  # 160 units of 128 x 128 on 132 SMs
        p = plan(512, 5120, 2048, 4)
        assert p["splits"] > 1 and 0 < p["whole_units"] < p["units"] == 160, p
    no_tail = wgmma_under({"wgmma_whole_clusters": 0}, lambda: plan(512, 5120, 2048, 4))
    assert no_tail["whole_units"] in (0, no_tail["units"]), no_tail
    forced = wgmma_under({"wgmma_whole_clusters": 3, "wgmma_splits": 2}, lambda: plan(512, 5120, 2048, 4))
    assert forced["splits"] == 2 and forced["whole_units"] == 6, forced
    for bad in (-2, 1 << 31):
        with pytest.raises(RuntimeError, match="_set_wgmma_whole_clusters: clusters must be -1"):
            kbit._C._set_wgmma_whole_clusters(bad)


def expected_grid_clusters(plan, forced):
    """The clusters a wgmma plan launches with kbit._C._set_wgmma_grid_clusters(forced > 0): clamped to the work
    clusters (whole clusters of `splits` units, then one per split unit) and to at least the split ones."""
    splits, units, whole = plan["splits"], plan["units"], plan["whole_units"]
    split_clusters = units - whole if splits > 1 else 0
    work = (whole // splits + split_clusters) if splits > 1 else units
    return min(max(forced, split_clusters, 1), work), work


@pytest.mark.parametrize("grid", [1, 3])
@pytest.mark.parametrize("splits,whole_clusters", [(1, 0), (2, 1), (3, 1000)], ids=["one", "tail1", "tailmax"])
@pytest.mark.parametrize("M,N", [(70, 2056), (129, 1032), (250, 520), (300, 517), (200, 520), (280, 1032)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("K", [512, 2080])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4, 5])
def test_wgmma_gemm_persistent(k, dtype, K, M, N, splits, whole_clusters, grid, poisoned_cuda):
    # persistent CTAs (kbit._C._set_wgmma_grid_clusters; CTAs of 80-160 tokens, M > 64): `grid` clusters launched (at
    # least the split units'), each running clusters of work in turn, the pipeline's stages and phases running on across
    # units, y's tile through the last group's stage, then the next unit. K = 2080 (9 groups, a 32-column tail) or 512
    # (2 groups, no more than the stages: most releases after y's tile, the producers a unit ahead); N = 2056 / 1032 /
    # 520 / 517 (a last row block of 8 rows; 517: y stored element by element); M = 70 / 129 / 250 / 300 / 200 / 280
    # in chunks of 80 / 96 / 128 / 112 / 160 / 144 tokens (kbit._C._set_wgmma_tokens; tokens past M): 10-18 units, so
    # CTAs of several whole units, and of whole units then a split one. Bitwise the same as a cluster launched per
    # cluster of work (the same steps in the same order), against the reference, the same bits on a rerun and a graph
    # replay.
    skip_unless_runs("wgmma_gemm", k, M)
    qw, W_hat = weight(k, N, K, dtype)
    x = acts(M, K, dtype, "wgpersist")
    tokens = {70: 80, 129: 96, 250: 128, 300: 112, 200: 160, 280: 144}[M]
    aids = {"wgmma_splits": splits, "wgmma_whole_clusters": whole_clusters, "wgmma_tokens": tokens}
    run = wgmma_plan_runs(x, qw, k, "wgpersist")
    plan, y, again = wgmma_under({**aids, "wgmma_grid_clusters": grid}, run)
    plan_one_each, y_one_each, _ = wgmma_under({**aids, "wgmma_grid_clusters": -1}, run)
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)
    assert_bitwise_equal(y, y_one_each)
    launched, work = expected_grid_clusters(plan, grid)
    assert plan["tokens"] == tokens and plan["splits"] == min(splits, -(-K // 256)), plan
    assert plan["ctas"] == work * plan["splits"], plan
    assert plan["grid_ctas"] == launched * plan["splits"] and plan_one_each["grid_ctas"] == plan["ctas"], plan
    if plan["splits"] == 1:  # every unit whole: `grid` CTAs run them all (10-18 units)
        assert launched == grid < work, plan
    elif grid == 1:  # the split units' clusters, the first of them after whole ones
        assert launched < work, plan


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_wgmma_persistent_rule(dtype, poisoned_cuda):
    # the rule (WgmmaPlan::grid_clusters): as many clusters as the GPU runs at once where every split unit is then its
    # CTA's last, else one per cluster of work. Qwen3 gate/up at M = 512 (the split tail: whole clusters, then split
    # units) and Qwen3 Q at M = 1024 (256 units, no splits on 132 SMs): fewer CTAs launched than the work, bitwise
    # the same as a cluster per cluster of work, and against the reference. The aid's bad values raise.
    if not kbit._C.wgmma_gemm_runs(4, 512):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan
    for M, N, K in ((512, 5120, 2048), (1024, 4096, 2048), (768, 14336, 4096), (256, 14336, 4096), (64, 4096, 2048),
                    (192, 12288, 1024), (288, 14336, 4096)):
        p = plan(M, N, K, 4)
        at_once = p["splits"] * p["resident_clusters"]
        split_ctas = (p["units"] - p["whole_units"]) * p["splits"] if p["splits"] > 1 else 0
        if p["tokens"] >= 80 and split_ctas <= min(p["ctas"], at_once):  # (persistent: CTAs of 80-160 tokens only)
            assert p["grid_ctas"] == min(p["ctas"], at_once), (M, N, K, p)
        else:
            assert p["grid_ctas"] == p["ctas"], (M, N, K, p)
        assert wgmma_under({"wgmma_grid_clusters": -1}, lambda: plan(M, N, K, 4))["grid_ctas"] == p["ctas"]
    for M, N, K in ((512, 5120, 2048), (1024, 4096, 2048), (192, 12288, 1024)):  # (192: 192 units of 96 tokens)
        qw, W_hat = weight(4, N, K, dtype)
        x = acts(M, K, dtype, "wgpersistrule")
        args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
        p = plan(M, N, K, 4)
        if torch.cuda.get_device_properties(0).multi_processor_count == 132:
            assert p["grid_ctas"] < p["ctas"], p
        y = torch.ops.kbit.wgmma_gemm(x, *args)
        check(y, x, W_hat, dtype)
        one_each = wgmma_under({"wgmma_grid_clusters": -1}, lambda: torch.ops.kbit.wgmma_gemm(x, *args))
        assert_bitwise_equal(y, one_each)
    # below M = 65 (64-token and smaller CTAs) one cluster per cluster of work, whatever the aid asks
    small = wgmma_under({"wgmma_grid_clusters": 1}, lambda: plan(40, 520, 2080, 4))
    assert small["tokens"] <= 64 and small["grid_ctas"] == small["ctas"], small
    for bad in (-2, 1 << 31):
        with pytest.raises(RuntimeError, match="_set_wgmma_grid_clusters: clusters must be 0 .the rule., -1"):
            kbit._C._set_wgmma_grid_clusters(bad)
    assert kbit._C._set_wgmma_grid_clusters(0) == 0


@pytest.mark.parametrize("splits", [1, 3, 8])
@pytest.mark.parametrize("M", [33, 64, 65, 100, 128, 129, 260])
@pytest.mark.parametrize("nk", [(300, 2080), (17, 96), (129, 4096)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_wgmma_gemm_row_tiles(k, dtype, nk, M, splits, poisoned_cuda):
    # both CTA shapes from M = 33: two warpgroups on 128 rows x 64 or 80-160 tokens (8 row tiles) and
    # four on 256 rows x chunks of 64 (16): 300 rows (3 row blocks of 128, the last partly filled;
    # 2 of 256), 129 rows (a second row block of one row), token chunks of 80-160 (the rule's) with tokens past M
    # (65, 100, 129, 260); the same bits on a rerun, and the two shapes give the same bits where they
    # run the same splits (each output's sum runs the same steps in the same order; a GPU may lower one
    # shape's splits where its clusters do not fit)
    skip_unless_runs("wgmma_gemm", k, M)
    if splits > 1 and nk[1] <= 256:
        pytest.skip("one 256-column group: every split count runs as 1 (the splits=1 case)")
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "wgrows")
    op = torch.ops.kbit.wgmma_gemm
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    previous = kbit._C._set_wgmma_splits(splits), kbit._C._set_wgmma_row_tiles(8)
    try:
        plan_two = kbit._C._wgmma_launch_plan(M, *nk, k)
        y = op(x, *args)
        again = op(x.clone(), *args)
        kbit._C._set_wgmma_row_tiles(16)
        plan_four = kbit._C._wgmma_launch_plan(M, *nk, k)
        four = op(x, *args)
    finally:
        kbit._C._set_wgmma_splits(previous[0])
        kbit._C._set_wgmma_row_tiles(previous[1])
    assert plan_two["row_tiles"] == 8 and plan_four["row_tiles"] == 16
    check(y, x, W_hat, dtype)
    check(four, x, W_hat, dtype)
    assert_bitwise_equal(again, y)
    if plan_two["splits"] == plan_four["splits"]:
        assert_bitwise_equal(four, y)


@pytest.mark.parametrize("M", [5, 16, 40, 130])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_wgmma_gemm_x_views(dtype, M, poisoned_cuda):
    # x reaches the kernel through a tensor map over a contiguous, 16-byte aligned [M, K]: a view starting one element
    # into its storage, a column-major one, a row-strided one and the first K columns of a wider tensor are copied to
    # one first (gemm_cuda.cpp); a view 16 bytes into its storage is taken as it is (the map's base need not be an
    # allocation's). Each gives the bits of x itself.
    skip_unless_runs("wgmma_gemm", 4, M)
    qw, W_hat = weight(4, 300, 2080, dtype)
    x = acts(M, 2080, dtype, "wgviews")
    op = lambda xx: torch.ops.kbit.wgmma_gemm(xx, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)  # noqa: E731
    y = check_call(op, x, W_hat, dtype)
    misaligned = torch.empty(M * 2080 + 1, device=DEV, dtype=dtype)[1:].view(M, 2080)
    aligned_inside = torch.empty(M * 2080 + 8, device=DEV, dtype=dtype)[8:].view(M, 2080)
    wide = torch.empty(M, 2080 + 32, device=DEV, dtype=dtype)
    twice = torch.empty(2 * M, 2080, device=DEV, dtype=dtype)
    for view in (misaligned, aligned_inside, wide[:, :2080], twice[::2]):
        view.copy_(x)
    assert misaligned.is_contiguous() and misaligned.data_ptr() % 16 != 0
    assert aligned_inside.is_contiguous() and aligned_inside.data_ptr() % 16 == 0
    column_major = x.t().contiguous().t()
    for view in (misaligned, aligned_inside, column_major, wide[:, :2080], twice[::2]):
        assert_bitwise_equal(op(view), y)


@pytest.mark.parametrize("M", [16, 40, 130])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_wgmma_gemm_k_tail_after_nan(dtype, M, poisoned_cuda):
    # A K tail's columns past K must reach the wgmmas as zeros (W's padding has zero scales, but 0 x NaN is NaN): the
    # tensor copies fill them so. A call of the same CTA shape on K = 2304 (9 whole groups) with x all NaN first, so
    # the stage that takes group 8 likely still holds NaN where K = 2080's group 8 lies past K (one split: group j in
    # stage j % S either way); then K = 2080 gives finite, correct outputs.
    skip_unless_runs("wgmma_gemm", 4, M)
    qw_full, _ = weight(4, 300, 2304, dtype)
    qw, W_hat = weight(4, 300, 2080, dtype)
    x = acts(M, 2080, dtype, "wgnan")
    op = torch.ops.kbit.wgmma_gemm
    previous = kbit._C._set_wgmma_splits(1)
    try:
        plans = [kbit._C._wgmma_launch_plan(M, 300, K, 4) for K in (2304, 2080)]
        assert plans[0]["tokens"] == plans[1]["tokens"] and plans[0]["row_tiles"] == plans[1]["row_tiles"], plans
        op(torch.full((M, 2304), float("nan"), device=DEV, dtype=dtype), qw_full.packed, qw_full.absmax,
           qw_full.row_scale, qw_full.codebook, 4)
        y = op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    finally:
        kbit._C._set_wgmma_splits(previous)
    check(y, x, W_hat, dtype)


def wgmma_with_and_without(qw, k, x, aids, variant):
    """wgmma_gemm on x under the tuning aids `aids` ({name: value}, kbit._C._set_<name>) with the aid `variant` at 2
    (on), then at 1 (off); all restored after. Checks that a graph replay of the variant's call is bitwise its eager
    call. Returns (plan on, y, y again on a copy of x, plan off, y off)."""
    op = torch.ops.kbit.wgmma_gemm
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    setters = {name: getattr(kbit._C, f"_set_{name}") for name in [*aids, variant]}
    previous = {name: setters[name](value) for name, value in {**aids, variant: 2}.items()}
    try:
        plan = kbit._C._wgmma_launch_plan(x.size(0), *qw.shape, k)
        y = op(x, *args)
        again = op(x.clone(), *args)
        check_graph_replay(lambda xx: op(xx, *args), [x.clone()], [acts(x.size(0), x.size(1), x.dtype, "wg-replay")])
        setters[variant](1)
        plan_off = kbit._C._wgmma_launch_plan(x.size(0), *qw.shape, k)
        off = op(x, *args)
    finally:
        for name, value in previous.items():
            setters[name](value)
    return plan, y, again, plan_off, off


@pytest.mark.parametrize("M", [5, 40, 130])
@pytest.mark.parametrize("nk", [(300, 2080), (1100, 4096)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_wgmma_gemm_first_stage_alone(k, dtype, nk, M, poisoned_cuda):
    # the first stage's copies (x's panels and the weights) requested alone and the other stages' once it landed
    # (kbit._C._set_wgmma_first_stage_alone): 9 / 16 groups a CTA at one split (more than the stages: refills
    # follow), a 32-column K tail, a partly filled last row block, each CTA shape by M; the same bits as every
    # stage requested at the start, on a rerun and on a graph replay
    skip_unless_runs("wgmma_gemm", k, M)
    qw, W_hat = weight(k, *nk, dtype)
    x = acts(M, nk[1], dtype, "wgalone")
    plan, y, again, plan_all, all_at_once = wgmma_with_and_without(
        qw, k, x, {"wgmma_splits": 1}, "wgmma_first_stage_alone")
    assert plan["first_stage_alone"] and not plan_all["first_stage_alone"] and plan["splits"] == 1, plan
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)
    assert_bitwise_equal(all_at_once, y)


def test_wgmma_launch_plan_resident_clusters():
    # the plan's resident clusters: the SMs without splits; with splits forced, clusters of that many CTAs, each on
    # its own SMs (one CTA per SM), so at most SMs / splits and at least one (every count up to 8 runs on Hopper)
    if not kbit._C.wgmma_gemm_runs(4, 128):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    previous = kbit._C._set_wgmma_splits(1)
    try:
        assert kbit._C._wgmma_launch_plan(128, 4096, 2048, 4)["resident_clusters"] == sms
        for splits in (2, 3, 4, 8):
            kbit._C._set_wgmma_splits(splits)
            p = kbit._C._wgmma_launch_plan(128, 4096, 2048, 4)
            assert p["splits"] == splits and 1 <= p["resident_clusters"] <= sms // splits, p
    finally:
        kbit._C._set_wgmma_splits(previous)


def test_wgmma_first_stage_alone_rule_and_aid():
    # the rule: every launch requests its first stage alone; the aid turns it off or on; bad modes raise
    if not kbit._C.wgmma_gemm_runs(4, 64):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan
    for M, N, K in ((16, 4096, 2048), (64, 4096, 2048), (128, 14336, 4096), (16, 28672, 8192), (300, 2048, 5120)):
        assert plan(M, N, K, 4)["first_stage_alone"], (M, N, K)
    previous = kbit._C._set_wgmma_first_stage_alone(1)
    try:
        assert not plan(64, 300, 2080, 4)["first_stage_alone"]
        kbit._C._set_wgmma_first_stage_alone(2)
        assert plan(64, 300, 2080, 4)["first_stage_alone"]
    finally:
        kbit._C._set_wgmma_first_stage_alone(previous)
    for bad in (3, -1):
        with pytest.raises(RuntimeError, match="_set_wgmma_first_stage_alone: mode must be 0"):
            kbit._C._set_wgmma_first_stage_alone(bad)


@pytest.mark.parametrize("M", [5, 40, 130])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 4])
def test_wgmma_y_tile_whole_pieces(k, dtype, M, poisoned_cuda):
    # one split: y's tile goes out through shared memory in 16-byte pieces where N % 8 == 0 (1000 rows: a last
    # row block of 104 or 232 rows; 4096: whole blocks), one element a thread otherwise (1001 rows); the first
    # 1000 rows of the 1001-row weight (the same rows, the same codes) give the same bits as the 1000-row one
    skip_unless_runs("wgmma_gemm", k, M)
    g = torch.Generator().manual_seed(seed_for(f"wg-ytile-{k}-{dtype}"))
    W = make_weight("normal", (4096, 1056), dtype, gen=g)
    x = acts(M, 1056, dtype, "wgytile")
    previous = kbit._C._set_wgmma_splits(1)
    try:
        ys = {}
        for N in (1000, 1001, 4096):
            qh = kbit.quantize(W[:N].contiguous(), k=k)
            flat = qh.to_layout("flat")
            W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
            qw = qh.to(DEV)
            assert kbit._C._wgmma_launch_plan(M, N, 1056, k)["splits"] == 1
            ys[N] = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
            check(ys[N], x, W_hat, dtype)
    finally:
        kbit._C._set_wgmma_splits(previous)
    assert_bitwise_equal(ys[1001][:, :1000], ys[1000])
    assert_bitwise_equal(ys[4096][:, :1000], ys[1000])


@pytest.mark.parametrize("tokens", [16, 32, 64, 80, 96, 112, 128, 144, 160])
@pytest.mark.parametrize("M", [40, 100])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_wgmma_forced_token_chunks(k, dtype, M, tokens, poisoned_cuda):
    # the tuning aid kbit._C._set_wgmma_tokens: chunks of 16 / 32 tokens (four warpgroups; M = 40 and 100 run 2-7
    # chunks, the last partly filled), 64 (the row-tiles rule's shape), 80-160 (two warpgroups) at any M,
    # on 300 rows (a partly filled last row block) x 2080 columns (a K tail; several groups, so splits): each chunk size
    # is a tensor map box of that many tokens
    skip_unless_runs("wgmma_gemm", k, M)
    qw, W_hat = weight(k, 300, 2080, dtype)
    x = acts(M, 2080, dtype, "wgtokens")
    previous = kbit._C._set_wgmma_tokens(tokens)
    try:
        plan = kbit._C._wgmma_launch_plan(M, 300, 2080, k)
        y = torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
        again = torch.ops.kbit.wgmma_gemm(x.clone(), qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
    finally:
        assert kbit._C._set_wgmma_tokens(previous) == tokens
    assert plan["tokens"] == tokens and plan["row_tiles"] == (8 if tokens >= 80 else 16 if tokens < 64 else
                                                              plan["row_tiles"]), plan
    row_blocks = -(-19 // plan["row_tiles"])  # 19 row tiles
    assert plan["units"] == -(-M // tokens) * row_blocks and plan["whole_units"] in (0, plan["units"]), plan
    assert plan["ctas"] == plan["whole_units"] + (plan["units"] - plan["whole_units"]) * plan["splits"], plan
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)


def test_wgmma_launch_plan_shapes():
    # the CTA shape rule (wgmma_plan): four warpgroups (16 row tiles) up to M = 32, two on 128 rows
    # x chunks of 80-128 tokens above 64 (ceil(M / 128) chunks, balanced, or one more where both plans run in one
    # wave and the model's CTA time is less: session 51's rule, checked here under kbit._C._set_wgmma_max_tokens(128);
    # its wide candidate above M = 128: test_wgmma_plan_wide_tokens); at 33-64 two on 128 x 64 unless that takes more
    # CTA waves than four or four run at least as many CTAs, each on fewer groups (Qwen3, GLM shared and Llama-3 8B
    # gate/up take
    # four, measured on the H200 in session 31; 70B gate/up by the waves, session 23); forcing either with
    # the tuning aid; the launch's CTAs follow the shape
    if not kbit._C.wgmma_gemm_runs(4, 64):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan
    assert set(plan(64, 4096, 2048, 4)) == {"tokens", "row_tiles", "splits", "ctas", "grid_ctas", "first_stage_alone",
                                            "resident_clusters", "units", "whole_units", "stream"}
    assert not plan(64, 4096, 2048, 4)["stream"]
    for M, tokens in ((1, 16), (16, 16), (17, 32), (32, 32)):
        p = plan(M, 4096, 2048, 4)
        assert (p["tokens"], p["row_tiles"]) == (tokens, 16), (M, p)
    def cdiv(a, b):
        return -(-a // b)
    for M, tokens in ((65, 80), (80, 80), (81, 96), (96, 96), (97, 112), (112, 112), (113, 128), (128, 128),
                      (129, 80), (160, 80), (161, 96), (192, 96), (193, 112), (224, 112), (225, 128), (256, 128),
                      (257, 96), (288, 96), (289, 112), (336, 112), (337, 128), (384, 128), (385, 112), (1000, 128)):
        more = cdiv(cdiv(M, cdiv(M, 128) + 1), 16) * 16  # one chunk more, balanced
        for N, K in ((4096, 2048), (28672, 8192)):  # (70B gate/up: never one wave, so never one chunk more)
            # session 51's rule (without the wide candidate: test_wgmma_plan_wide_tokens)
            p = wgmma_under({"wgmma_max_tokens": 128}, lambda: plan(M, N, K, 4))
            assert p["row_tiles"] == 8 and p["units"] == cdiv(M, p["tokens"]) * cdiv(N, 128), (M, N, p)
            assert p["ctas"] == p["whole_units"] + (p["units"] - p["whole_units"]) * p["splits"], p
            # the rule's choice (wgmma_plan_large), rebuilt from both candidates' plans (the aid forces exactly the
            # candidate's plan): one chunk more where both run their CTAs in one wave and its groups a CTA x (96 +
            # tokens) is less
            fewer = wgmma_under({"wgmma_tokens": tokens}, lambda: plan(M, N, K, 4))
            one_more = wgmma_under({"wgmma_tokens": more}, lambda: plan(M, N, K, 4)) if more >= 80 else None
            def one_wave(q):
                return q["ctas"] <= q["splits"] * q["resident_clusters"]
            def cta_time(q):
                return cdiv(cdiv(K, 256), q["splits"]) * (96 + q["tokens"])
            take_more = (one_more is not None and more != tokens and one_wave(fewer) and one_wave(one_more) and
                         cta_time(one_more) < cta_time(fewer))
            assert p["tokens"] == (more if take_more else tokens), (M, N, p, fewer, one_more)
            assert N == 4096 or not take_more, (M, N, p)
    for M in (33, 64):
        for N, K in ((4096, 2048), (2048, 4096), (2048, 5120), (5120, 2048), (28672, 8192)):
            p = plan(M, N, K, 4)
            assert p["tokens"] == 64 and p["row_tiles"] in (8, 16) and 1 <= p["splits"] <= 8, (M, N, K, p)
            assert p["units"] == cdiv(cdiv(N, 16), p["row_tiles"])
            assert p["ctas"] == p["whole_units"] + (p["units"] - p["whole_units"]) * p["splits"], p
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:  # the H100 / H200 the rule was measured on
        assert plan(64, 4096, 2048, 4)["row_tiles"] == 8     # Qwen3 Q
        assert plan(64, 2048, 5120, 4)["row_tiles"] == 8     # Qwen3 down
        assert plan(64, 5120, 2048, 4)["row_tiles"] == 16    # Qwen3 gate/up: 80 CTAs of 2 groups against 80 of 4
        assert plan(64, 10240, 2048, 4)["row_tiles"] == 16   # GLM shared gate/up: 80 of 4 against 80 of 8
        assert plan(64, 14336, 4096, 4)["row_tiles"] == 16   # Llama-3 8B gate/up: 112 of 8 against 112 of 16
        assert plan(64, 28672, 8192, 4)["row_tiles"] == 16   # 70B gate/up: two would take two waves
        assert plan(64, 2048, 10240, 4)["row_tiles"] == 8    # GLM shared down: 64 CTAs against 96
        # one chunk more above M = 64 (session 51 run 2, H200): Qwen3 gate/up at M = 256 in 3 chunks of 96 (120 CTAs of 8
        # groups against 80 of 128 tokens), Q at 384 in 4 of 96 (128 CTAs against 96); not where that takes a second
        # wave (gate/up at 384: 160 units; Q at 512: 160) or more groups a CTA (O at 512: 80 CTAs of 16 groups against
        # 128 of 8, 2 splits; run 2 had 112 tokens forced there 1.43x the time)
        assert plan(256, 5120, 2048, 4)["tokens"] == 96 and plan(384, 4096, 2048, 4)["tokens"] == 96
        assert plan(384, 5120, 2048, 4)["tokens"] == 128 and plan(512, 4096, 2048, 4)["tokens"] == 128
        assert plan(512, 2048, 4096, 4)["tokens"] == 128
    previous = kbit._C._set_wgmma_row_tiles(16)
    try:
        assert plan(100, 4096, 2048, 4)["row_tiles"] == 16 and plan(100, 4096, 2048, 4)["tokens"] == 64
        kbit._C._set_wgmma_row_tiles(8)
        assert plan(40, 5120, 2048, 4)["row_tiles"] == 8
        assert plan(20, 5120, 2048, 4)["row_tiles"] == 16  # M <= 32: four warpgroups whatever is forced
    finally:
        kbit._C._set_wgmma_row_tiles(previous)
    with pytest.raises(RuntimeError, match="needs M, N, K >= 1"):
        plan(0, 4096, 2048, 4)


def wgmma_model_time(q, K, split_step=100):
    """gemm_cuda.cpp's wgmma_model_time of a plan (kbit._C._wgmma_launch_plan's dict): the work clusters dealt
    round-robin to the clusters that run at once, a whole unit G groups x (128 + tokens) + 500, a split CTA its share of
    the groups x (128 + tokens) + 1000 + split_step x its splits past 4 (kWgModelSplitStep = 100 in the rule, 0 in
    session 52's); the busiest cluster's sum."""
    groups, s = -(-K // 256), q["splits"]
    whole = q["units"] if s == 1 else q["whole_units"] // s
    work = whole + (q["units"] - q["whole_units"] if s > 1 else 0)
    at_once = min(max(q["resident_clusters"], 1), work)
    whole_cost = groups * (128 + q["tokens"]) + 500
    split_cost = -(-groups // s) * (128 + q["tokens"]) + 1000 + split_step * max(s - 4, 0)
    dealt = [len(range(b, whole, at_once)) for b in range(at_once)]
    return max(w * whole_cost + (len(range(b, work, at_once)) - w) * split_cost for b, w in enumerate(dealt))


def test_wgmma_plan_wide_tokens():
    # the rule's wide candidate (wgmma_plan_large): ceil(M / 160) chunks where they are fewer than of 128 (M = 129-160,
    # 257-320, ...), balanced to 144 or 160 tokens (session 53; session 52's rule, kbit._C._set_wgmma_max_tokens(160),
    # took 160), taken where the model's time (wgmma_model_time above, fitted in session 52, with session 53's split
    # step) is less than that of session 51's plan (kbit._C._set_wgmma_max_tokens(128)); rebuilt here from both
    # candidates' plans (the aids force exactly each candidate's plan)
    if not kbit._C.wgmma_gemm_runs(4, 512):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan

    def cdiv(a, b):
        return -(-a // b)

    took = set()
    for N, K in ((4096, 2048), (5120, 2048), (2048, 4096), (2048, 5120), (2048, 10240), (14336, 4096), (28672, 8192)):
        for M in (129, 136, 144, 145, 160, 161, 200, 256, 257, 272, 288, 300, 320, 400, 432, 480, 600, 640, 800, 1000):
            p = plan(M, N, K, 4)
            base = wgmma_under({"wgmma_max_tokens": 128}, lambda: plan(M, N, K, 4))
            assert base["tokens"] <= 128, (M, N, K, base)
            session52 = wgmma_under({"wgmma_max_tokens": 160}, lambda: plan(M, N, K, 4))
            if cdiv(M, 160) >= cdiv(M, 128):  # no fewer chunks: session 51's plan
                assert p == base == session52, (M, N, K, p, base, session52)
                continue
            # session 52's rule: chunks of 160, the model without the split step
            wide160 = wgmma_under({"wgmma_tokens": 160}, lambda: plan(M, N, K, 4))
            take52 = wgmma_model_time(wide160, K, 0) < wgmma_model_time(base, K, 0)
            assert session52 == (wide160 if take52 else base), (M, N, K, session52, wide160, base)
            tokens = cdiv(cdiv(M, cdiv(M, 160)), 16) * 16  # (144 or 160)
            wide = wgmma_under({"wgmma_tokens": tokens}, lambda: plan(M, N, K, 4))
            take = wgmma_model_time(wide, K) < wgmma_model_time(base, K)
            assert p == (wide if take else base), (M, N, K, p, wide, base)
            if take:
                took.add((N, M, tokens))
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert {t for _, _, t in took} == {144, 160}, sorted(took)
        # measured in session 52 (runs 1-2, H200): Llama-3 8B gate/up at M = 160, 112 units of 160 tokens in one round
        # against 224 of 80 in two (0.66x the time); 70B at M = 160 (0.68x); Qwen3 Q at M = 160 stays (160 forced:
        # 1.07x), and O, down and GLM shared down at M = 800 (1.11x, 1.14x, 1.26x)
        assert {(14336, 160, 160), (28672, 160, 160), (14336, 320, 160), (14336, 136, 144)} <= took, sorted(took)
        assert (4096, 160, 160) not in took and (2048, 800, 160) not in took
        assert plan(160, 14336, 4096, 4)["tokens"] == 160 and plan(272, 14336, 4096, 4)["tokens"] == 144
        # session 53 runs 2-3: Qwen3 KV at M = 400 ran 13% faster in 80 tokens x 4 splits than in 144 x 8, which the
        # split step prefers; Q at M = 272 9% faster in 144 x 2 than in 80 x 1, which it leaves
        assert (plan(400, 512, 2048, 4)["tokens"], plan(400, 512, 2048, 4)["splits"]) == (80, 4)
        assert (plan(272, 4096, 2048, 4)["tokens"], plan(272, 4096, 2048, 4)["splits"]) == (144, 2)
    for bad in (-1, 64, 96, 144, 192):
        with pytest.raises(RuntimeError, match="tokens must be 0 .the rule: .*, 128 .* or 160 .*; got " + str(bad)):
            kbit._C._set_wgmma_max_tokens(bad)
    assert kbit._C._set_wgmma_max_tokens(0) == 0


def test_wgmma_remembered_plan_follows_the_aids(poisoned_cuda):
    # the wgmma plan is remembered per (device, shape, k, tuning aids) (remembered_plans.h): each aid set between two
    # calls of one shape gets its own plan, and set back the rule's plan again; a call's bits follow the plan (two
    # K-splits add their partials in another order than one CTA over all of K: other bits, which a stale plan would
    # repeat)
    skip_unless_runs("wgmma_gemm", 4, 200)
    plan = kbit._C._wgmma_launch_plan
    N, K, M = 14336, 4096, 200  # Llama-3 8B gate/up: 112 row blocks x two chunks (the H200: of 112 tokens, one split)
    rule = plan(M, N, K, 4)
    assert rule["row_tiles"] == 8 and rule["first_stage_alone"], rule
    splits = 2 if rule["splits"] != 2 else 3
    tokens = 96 if rule["tokens"] != 96 else 80
    forced = {  # aid: (value, what the plan then says), each unlike the rule's plan
        "wgmma_splits": (splits, lambda p: p["splits"] == splits),
        "wgmma_row_tiles": (16, lambda p: p["row_tiles"] == 16 and p["tokens"] == 64),
        "wgmma_tokens": (tokens, lambda p: p["tokens"] == tokens),
        "wgmma_first_stage_alone": (1, lambda p: not p["first_stage_alone"]),
    }
    if rule["grid_ctas"] < rule["ctas"]:  # persistent (224 units on 132 SMs)
        forced["wgmma_grid_clusters"] = (-1, lambda p: p["grid_ctas"] == p["ctas"] > rule["grid_ctas"])
    for aid, (value, holds) in forced.items():
        assert plan(M, N, K, 4) == rule
        p = wgmma_under({aid: value}, lambda: plan(M, N, K, 4))
        assert holds(p) and p != rule, (aid, p, rule)
        assert plan(M, N, K, 4) == rule, aid
    # the split tail's aid (with splits forced, 0 whole clusters unless it says how many) and the wide candidate's
    two_splits = wgmma_under({"wgmma_splits": 2}, lambda: plan(M, N, K, 4))
    tail = wgmma_under({"wgmma_splits": 2, "wgmma_whole_clusters": 10}, lambda: plan(M, N, K, 4))
    assert two_splits["whole_units"] == 0 and tail["whole_units"] == 20, (two_splits, tail)
    wide = plan(160, N, K, 4)
    assert wgmma_under({"wgmma_max_tokens": 128}, lambda: plan(160, N, K, 4))["tokens"] < 160
    assert plan(160, N, K, 4) == wide and plan(M, N, K, 4) == rule
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:  # (the model takes the wide chunk there)
        assert wide["tokens"] == 160, wide
    # the bits: 1 and 2 splits forced in turn on one call (K = 2048, 8 groups)
    qw, W_hat = weight(4, 512, 2048)
    x = acts(100, 2048, torch.float16, "wg-memo")
    fn = lambda: torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)  # noqa: E731
    one = wgmma_under({"wgmma_splits": 1}, fn)
    check(one, x, W_hat, torch.float16)
    two = wgmma_under({"wgmma_splits": 2}, fn)
    check(two, x, W_hat, torch.float16)
    assert not torch.equal(one, two)
    assert_bitwise_equal(wgmma_under({"wgmma_splits": 1}, fn), one)
    assert_bitwise_equal(wgmma_under({"wgmma_splits": 2}, fn), two)


@pytest.mark.parametrize("grid", [0, 7, 50])
@pytest.mark.parametrize("M,tokens", [(97, 96), (130, 80), (200, 128), (230, 112), (300, 144), (300, 160)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("nk", [(520, 2080), (4100, 2080), (300, 5120), (17, 4352)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_wgmma_gemm_stream(k, dtype, nk, M, tokens, grid, poisoned_cuda):
    # the stream-K schedule (kbit._C._set_wgmma_stream(2)): a lane of CTAs a token chunk, each lane's CTAs sharing the
    # row blocks' 256-column steps evenly, a unit's pieces written to the workspace and added in CTA order by whichever
    # piece counts last. 520 / 4100 rows (a last row block of 8 / 4 rows), 17 (one partial row tile), K = 2080 (9
    # groups, a 32-column tail), 5120 (20), 4352 (17); tokens past M. A CTA per SM (0), or at most 7 or 50 CTAs
    # (kbit._C._set_wgmma_grid_clusters): a unit over up to 17 CTAs (one step each: 17 x 4352), many units a CTA with
    # pieces at both ends (7 CTAs: 2-3 a lane). Every unit against the reference (a lost or doubled piece shows in its
    # own unit), the plan as forced, the same bits on a rerun and in a graph replay.
    skip_unless_runs("wgmma_gemm", k, M)
    N, K = nk
    qw, W_hat = weight(k, N, K, dtype)
    x = acts(M, K, dtype, "wgstream")
    run = wgmma_plan_runs(x, qw, k, "wgstream")
    plan, y, again = wgmma_under({"wgmma_tokens": tokens, "wgmma_stream": 2, "wgmma_grid_clusters": grid}, run)
    chunks, row_blocks = -(-M // tokens), -(-N // 128)
    units = chunks * row_blocks
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ctas = min(sms // chunks, row_blocks * ((K + 255) // 256), (grid or 1 << 30) // chunks) * chunks
    assert plan["tokens"] == tokens and plan["stream"] and plan["units"] == units, plan
    assert plan["splits"] == 1 and plan["ctas"] == plan["grid_ctas"] == ctas and plan["whole_units"] == 0, plan
    check(y, x, W_hat, dtype)
    assert_bitwise_equal(again, y)
    ref = x.double() @ W_hat.T
    for unit in range(units):
        tok, rows = unit_slices(plan, unit, N)
        want = ref[tok, rows]
        if want.numel() and want.norm() > 0:
            err = float((y[tok, rows].double() - want).norm() / want.norm())
            assert err <= GEMM_RTOL[dtype], (unit, units, err)


def test_wgmma_stream_runs_its_kernel(poisoned_cuda):
    # a stream-K plan launches wgmma_stream_gemm_kernel (a plan that said stream but ran the work-cluster kernel would
    # pass test_wgmma_gemm_stream's checks where the launch's shapes agree), and the rule's plan the other kernel
    skip_unless_runs("wgmma_gemm", 4, 200)
    qw, W_hat = weight(4, 520, 2080)
    x = acts(200, 2080, torch.float16, "wgstream-kernel")
    fn = lambda: torch.ops.kbit.wgmma_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)  # noqa: E731
    stream = wgmma_under({"wgmma_stream": 2}, lambda: cuda_kernel_names(fn))
    rule = wgmma_under({"wgmma_stream": 1}, lambda: cuda_kernel_names(fn))
    assert any("wgmma_stream_gemm_kernel" in n for n in stream), stream
    assert not any("wgmma_stream_gemm_kernel" in n for n in rule) and any("wgmma_gemm_kernel" in n for n in rule), rule
    check(wgmma_under({"wgmma_stream": 2}, fn), x, W_hat, torch.float16)


def test_wgmma_stream_plan_falls_back():
    # stream-K only where the plan's shape is a persistent one (80-160 tokens) and every token chunk gets a CTA: M = 40
    # (64 tokens) and a cap below the chunks keep the plan without it; the rule never takes it; bad values raise
    if not kbit._C.wgmma_gemm_runs(4, 512):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    plan = kbit._C._wgmma_launch_plan
    assert not wgmma_under({"wgmma_stream": 2}, lambda: plan(40, 4096, 4096, 4))["stream"]
    assert wgmma_under({"wgmma_stream": 2}, lambda: plan(512, 4096, 4096, 4))["stream"]
    assert not wgmma_under({"wgmma_stream": 1}, lambda: plan(512, 4096, 4096, 4))["stream"]
    assert not plan(512, 4096, 4096, 4)["stream"]
    # (at most 3 CTAs for 4 token chunks of 128: no lane gets a CTA)
    assert plan(512, 4096, 4096, 4)["tokens"] == 128
    assert not wgmma_under({"wgmma_stream": 2, "wgmma_grid_clusters": 3}, lambda: plan(512, 4096, 4096, 4))["stream"]
    for bad in (-1, 3):
        with pytest.raises(RuntimeError, match="_set_wgmma_stream: mode must be 0 .the rule., 1 .never. or 2"):
            kbit._C._set_wgmma_stream(bad)
    with pytest.raises(RuntimeError, match="not a bool"):
        kbit._C._set_wgmma_stream(True)


def test_wgmma_aids_reject_bad_values():
    for bad in (-1, 9):
        with pytest.raises(RuntimeError, match="splits must be 0 .the rule. or 1 to 8; got " + str(bad)):
            kbit._C._set_wgmma_splits(bad)
    for bad in (-1, 4, 32):
        with pytest.raises(RuntimeError, match="row_tiles must be 0 .the rule., 8 .* or 16 .*; got " + str(bad)):
            kbit._C._set_wgmma_row_tiles(bad)
    for bad in (-1, 8, 48, 72, 100, 136, 176, 192, 256):
        with pytest.raises(RuntimeError, match="tokens must be 0 .the rule., 16 or 32 .*; got " + str(bad)):
            kbit._C._set_wgmma_tokens(bad)
    assert kbit._C._set_wgmma_splits(0) == 0 and kbit._C._set_wgmma_row_tiles(0) == 0
    assert kbit._C._set_wgmma_tokens(0) == 0 and kbit._C._set_wgmma_first_stage_alone(0) == 0
    with pytest.raises(RuntimeError, match="not a bool"):
        kbit._C._set_wgmma_first_stage_alone(True)


@pytest.mark.parametrize("M", [16, 100])
def test_wgmma_gemm_graph(M):
    # x by tensor copies through a map encoded at capture (a graph replays the captured map: the same x buffer, new
    # values copied into it), M = 16 (one chunk of 16 tokens) and 100 (112 tokens, 12 past M); 257 x 5120 splits K,
    # the splits a cluster adding their partials in shared memory: capture and replay like gemm
    skip_unless_runs("wgmma_gemm", 4, M)
    qw, _ = weight(4, 257, 5120)
    x0 = acts(M, 5120, torch.float16, "wg0")
    x1 = acts(M, 5120, torch.float16, "wg1")
    op = torch.ops.kbit.wgmma_gemm
    check_graph_replay(lambda x: op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4), [x0.clone()], [x1])


# ---------------------------------------------------------------------------------------------
# grouped_gemm
# ---------------------------------------------------------------------------------------------
def offsets(counts):
    return torch.tensor([0] + torch.tensor(counts).cumsum(0).tolist(), dtype=torch.int32, device=DEV)


def check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="auto"):
    """grouped_gemm against the reference, and each grouped kernel alone (E <= 1024): the
    GEMV (grouped_gemv_gemm, with gemv_decode), the small-M kernel (grouped_mma_gemm) and the tile
    kernel (grouped_tile_gemm)."""
    off = offsets(counts)
    ref = torch.zeros(x.shape[0], qw.out_features, dtype=torch.float64, device=DEV)
    o = off.tolist()
    for e in range(len(counts)):
        ref[o[e]:o[e + 1]] = x[o[e]:o[e + 1]].double() @ W_hat[e].T
    ops = [lambda: kbit.grouped_gemm(x, qw, off)]
    if len(counts) <= 1024:
        ops += [lambda: torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, qw.k,
                                                         gemv_decode)]
        ops += [lambda op=op: op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, qw.k)
                for op in (torch.ops.kbit.grouped_mma_gemm, torch.ops.kbit.grouped_tile_gemm)]
    for run in ops:
        y = run()
        assert y.device.type == "cuda" and y.dtype == dtype and y.shape == (x.shape[0], qw.out_features)
        assert not torch.isnan(y).any()
        if ref.numel():
            err = float((y.double() - ref).norm() / ref.norm())
            assert err <= GEMM_RTOL[dtype], err
    return kbit.grouped_gemm(x, qw, off)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_grouped_gemm_cuda_random_counts(k, dtype, gen, poisoned_cuda):
    E, N, K = 16, 257, 1024
    qw, W_hat = weight(k, N, K, dtype, E=E)
    for T in (1, 7, 64, 256):
        counts = torch.multinomial(torch.ones(E), T, replacement=True, generator=gen).bincount(minlength=E)
        counts = counts.tolist()
        x = acts(T, K, dtype, f"grp{T}")
        check_grouped(qw, W_hat, x, counts, dtype)


@pytest.mark.parametrize("mean", [1, 5, 12, 40, 100])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", [2, 5])
def test_grouped_tile_gemm_token_tiles(k, dtype, mean, gen, poisoned_cuda):
    # the grouped tile kernel's token tile follows twice the mean rows per expert (8/16/32/64
    # tokens, experts past the tile take several chunks); experts with no rows, 300 rows = a
    # CTA tile of 256 rows and a partial one, a K tail (2080)
    E, N, K = 8, 300, 2080
    qw, W_hat = weight(k, N, K, dtype, E=E)
    counts = torch.multinomial(torch.ones(E - 2), mean * E, replacement=True, generator=gen).bincount(minlength=E - 2)
    counts = [0] + counts.tolist() + [0]
    x = acts(sum(counts), K, dtype, f"gtile{mean}")
    check_grouped(qw, W_hat, x, counts, dtype)
    off = offsets(counts)
    y = torch.ops.kbit.grouped_tile_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, k)
    assert_bitwise_equal(torch.ops.kbit.grouped_tile_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, k), y)


@pytest.mark.parametrize("counts", [[5], [0], [256], [0, 0, 0, 0], [0, 200, 0, 0], [0, 0, 0, 33],
                                    [1] * 64], ids=lambda c: f"E{len(c)}-T{sum(c)}")
def test_grouped_gemm_cuda_edge_counts(counts, poisoned_cuda):
    E, N, K = len(counts), 33, 96
    qw, W_hat = weight(3, N, K, torch.bfloat16, E=E)
    x = acts(sum(counts), K, torch.bfloat16, f"edge{E}")
    check_grouped(qw, W_hat, x, counts, torch.bfloat16)


def test_grouped_gemm_cuda_deterministic():
    E, N, K = 8, 257, 5120
    qw, _ = weight(2, N, K, torch.float16, E=E)
    off = offsets([3, 0, 40, 1, 0, 80, 2, 2])
    x = acts(128, K, torch.float16, "gdet")
    y0 = kbit.grouped_gemm(x, qw, off)
    for _ in range(3):
        assert_bitwise_equal(kbit.grouped_gemm(x, qw, off), y0)


@pytest.mark.parametrize("decode", ["mma", "shuffle"])
@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_grouped_gemv_gemm_decode(k, dtype, decode, gen, poisoned_cuda):
    # the grouped GEMV at decode, both decodes: rows per chunk = the mean rows per expert rounded up
    # (1, 2, 3, 4, 6 and 11 here; at most 16, the shuffle decode 4; the mma decode's kernel has 8
    # or 16 token slots above 4), experts with 0 rows, an expert with 9 or 20 rows (several
    # chunks), a K tail (2080: a 32-column last group) and several groups per warp (K = 5120),
    # N = 300 (a partial last tile); bitwise repeat and CUDA-graph replay with other offsets
    for E, N, K, counts in ((8, 300, 2080, [1, 0, 1, 1, 0, 1, 1, 1]), (6, 40, 5120, [0, 9, 1, 0, 2, 0]),
                            (4, 300, 2080, [3, 3, 0, 5]), (4, 40, 5120, [4, 9, 1, 2]), (64, 33, 96, None),
                            (4, 300, 2080, [7, 0, 9, 6]), (3, 40, 5120, [20, 12, 1])):
        qw, W_hat = weight(k, N, K, dtype, E=E)
        if counts is None:  # 64 experts, 64 tokens drawn at random: many experts get none
            counts = torch.multinomial(torch.ones(E), 64, replacement=True, generator=gen).bincount(minlength=E).tolist()
        x = acts(sum(counts), K, dtype, f"ggemv{E}")
        check_grouped(qw, W_hat, x, counts, dtype, gemv_decode=decode)
        off = offsets(counts)
        fn = lambda xx, oo: torch.ops.kbit.grouped_gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale,  # noqa: E731
                                                              qw.codebook, oo, k, decode)
        y = fn(x, off)
        assert_bitwise_equal(fn(x, off), y)
        other = offsets(list(reversed(counts)))
        check_graph_replay(fn, [x.clone(), off.clone()], [acts(sum(counts), K, dtype, f"ggemv{E}b"), other])


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemv_warp_schedule(dtype, gen, poisoned_cuda):
    # With E <= 32 (mma decode) each warp builds the schedule in registers (WarpSchedule, shuffle
    # scans and a ballot), by default with static first chunks where T >= E (unit u < E NT = tile u,
    # its codes copied before the offsets are read); kbit._C._set_gemv_grouped_schedule takes
    # the per-warp dynamic numbering (1) or the per-CTA shared-memory schedule (0) instead. Each
    # row is summed alike in every form, so the same bits, for: E = 1, E = 32 (lane 31 the last
    # expert), T >= E with zero-row experts (static units that write nothing) and T < E, an
    # expert with several chunks, invalid offsets (rows no expert owns come back NaN in the same
    # places), and CUDA-graph replay with other offsets (the schedule is rebuilt on every replay)
    def cases():
        for E, K, counts in ((1, 2080, [5]), (8, 2080, [1] * 8), (32, 96, None), (32, 2080, [0] * 31 + [3]),
                             (12, 5120, [0, 2, 0, 0, 9, 1, 1, 0, 3, 2, 1, 0])):
            if counts is None:
                counts = torch.multinomial(torch.ones(E), 40, replacement=True, generator=gen).bincount(minlength=E).tolist()
            yield E, K, offsets(counts), counts
        T = 10
        for o in ([0, 6, 3, 8, 10], [-5, 2, 4, 6, 99], [0, 2, 3, 4, 7]):
            yield 4, 96, torch.tensor(o, dtype=torch.int32, device=DEV), [T] + [0] * 3  # T rows
    for E, K, off, counts in cases():
        qw, W_hat = weight(4, 40, K, dtype, E=E)
        x = acts(sum(counts), K, dtype, f"wsched{E}-{K}")
        if int(off[-1]) == sum(counts) and int(off[0]) == 0 and bool((off[1:] >= off[:-1]).all()):
            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
        fn = lambda xx, oo: torch.ops.kbit.grouped_gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale,  # noqa: E731
                                                              qw.codebook, oo, 4, "mma")
        y = fn(x, off)
        for form in (1, 0):
            assert kbit._C._set_gemv_grouped_schedule(form) == 2
            try:
                assert_bitwise_equal(fn(x, off), y)
            finally:
                assert kbit._C._set_gemv_grouped_schedule(2) == form
        other = off.flip(0).neg().add(int(off[-1]) + int(off[0]))  # the counts reversed
        check_graph_replay(fn, [x.clone(), off.clone()], [acts(sum(counts), K, dtype, f"wsched{E}b"), other])
    with pytest.raises(RuntimeError, match="_set_gemv_grouped_schedule: form must be 0 .*got 4"):
        kbit._C._set_gemv_grouped_schedule(4)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
@pytest.mark.parametrize("k", KS)
def test_grouped_gemv_shared_x(k, dtype, gen, poisoned_cuda):
    # Grouped x shared (kbit._C._set_gemv_grouped_x_shared, default 1): with one warp per unit and 16-row tiles a
    # multiple of a CTA's 8 or 16 unit slots, a round's units are one chunk of one expert, whose x the CTA copies once
    # into the x image of the round's parity (two images, a named barrier a round), and the rings carry codes only, 2
    # stages at k = 4, 5 (k = 2, 3: the most that keep the CTAs per SM; the resident-stages aid: up to 4, at most K's
    # groups). Against the reference, bitwise against x staged by every warp (mode 0, the same sums in the same order)
    # and against 8-warp CTAs (mode 2), and CUDA-graph replay with other offsets, for: the Qwen3 MoE decode cell (64
    # experts x 8 rows, 2048 x 512, 8 token slots, 8 groups), a K tail (2080: 9 groups, the last 32 columns) with
    # zero-row experts and an expert of several chunks, 4 token slots on K = 1024 (4 groups: at 4 slots on 2-3 groups
    # the rule shares x only in runs, below), and 24 tiles (3 x 8: 8-warp CTAs), and K of 2 groups with a tail (480) and
    # zero-row experts. Each also with the runs aid (kbit._C._set_gemv_shared_x_run): 1 unit a warp a round, and 2 or 4
    # adjacent units where the tiles are a multiple of that x the slots (bitwise the same sums)
    plan = kbit._C._grouped_gemv_launch_plan
    props = torch.cuda.get_device_properties(0)

    def bitwise_over_runs(T, E, N, K, fn, x, off, y):
        # the runs aid at 1, 2 and 4 (2 and 4 where the tiles are a multiple of that x the slots): x shared, y's bits
        for run in (1, 2, 4):
            assert kbit._C._set_gemv_shared_x_run(run) == 0
            try:
                q = plan(T, E, N, K, k, "mma")
                assert q["x_shared"] and q["x_shared_run"] == (run if N // 16 % (run * q["warps"]) == 0 else 1), q
                assert_bitwise_equal(fn(x, off), y)
            finally:
                assert kbit._C._set_gemv_shared_x_run(0) == run

    cases = [(64, 512, 2048, [8] * 64), (16, 256, 2080, [5, 0, 20, 3, 0, 8, 1, 2, 7, 0, 6, 4, 5, 9, 0, 10]),
             (24, 128, 1024, None), (6, 384, 1024, [7, 8, 0, 6, 8, 3]), (8, 512, 480, [8, 0, 5, 8, 3, 8, 0, 7])]
    prev_warps = kbit._C._set_gemv_unit_warps(1)  # one warp per unit in every case (the rule halves to 1 on many units)
    try:
        for E, N, K, counts in cases:
            if counts is None:  # 24 experts, 96 rows at random (mean 4: 4 token slots), some experts empty
                counts = torch.multinomial(torch.ones(E), 96, replacement=True, generator=gen).bincount(minlength=E).tolist()
            T, G = sum(counts), -(-K // 256)
            p = plan(T, E, N, K, k, "mma")
            assert p["x_shared"] and p["warps_per_unit"] == 1 and p["token_slots"] in (4, 8), (E, N, K, p)
            assert p["warps"] in (8, 16) and N // 16 % p["warps"] == 0, p  # 8 or 16 unit slots, the tiles a multiple
            if E == 64 and getattr(props, "shared_memory_per_multiprocessor", 0) == 228 * 1024:
                # (the H100 / H200's 228 KB an SM) 16-warp CTAs where one of them keeps more warps per SM than 8-warp
                # CTAs: k = 4, 5; at k = 2, 3 two 8-warp CTAs fit an SM, a tie that keeps 8
                assert p["warps"] == (16 if k >= 4 else 8), p
            assert (p["ring_stages"] == 2 if k >= 4 else 2 <= p["ring_stages"] <= min(4, G)), p  # session 39 run 2
            assert p["x_shared_run"] == 1 or N // 16 % (p["x_shared_run"] * p["warps"]) == 0, p
            qw, W_hat = weight(k, N, K, dtype, E=E)
            x = acts(T, K, dtype, f"gshx{E}")
            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
            off = offsets(counts)
            fn = lambda xx, oo: torch.ops.kbit.grouped_gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale,  # noqa: E731
                                                                  qw.codebook, oo, k, "mma")
            y = fn(x, off)
            for mode in (0, 2):  # x staged by every warp; x shared in CTAs of 8 warps (the rule's may have 16)
                assert kbit._C._set_gemv_grouped_x_shared(mode) == 1
                try:
                    q = plan(T, E, N, K, k, "mma")
                    assert q["x_shared"] == (mode == 2) and (mode == 0 or q["warps"] == 8), q
                    assert_bitwise_equal(fn(x, off), y)
                finally:
                    assert kbit._C._set_gemv_grouped_x_shared(1) == mode
            bitwise_over_runs(T, E, N, K, fn, x, off, y)
            other = offsets(list(reversed(counts)))
            check_graph_replay(fn, [x.clone(), off.clone()], [acts(T, K, dtype, f"gshx{E}b"), other])
        if k == 4:
            # runs of 4 over two rounds a CTA (the rule's choice on Qwen3 MoE down 512 x 8): 8-warp CTAs on 32 tiles
            # (K = 512), 8 experts more than the resident CTAs, each expert one chunk, so a round of 32 units a CTA
            # leaves some CTAs a second; against the reference and bitwise against runs of 2 and one unit
            assert kbit._C._set_gemv_grouped_x_shared(2) == 1
            try:
                N, K = 512, 512
                E = plan(8 * 64, 64, N, K, k, "mma")["ctas_per_sm"] * props.multi_processor_count + 8
                counts, T = [8] * E, 8 * E
                qw, W_hat = weight(k, N, K, dtype, E=E)
                x, off = acts(T, K, dtype, "gshx-runs"), offsets(counts)
                ys = {}
                for run in (4, 2, 1):
                    assert kbit._C._set_gemv_shared_x_run(run) == 0
                    try:
                        q = plan(T, E, N, K, k, "mma")
                        assert q["x_shared"] and q["warps"] == 8 and q["x_shared_run"] == run, q
                        if run == 4:
                            assert E * N // 16 > q["grid"] * 8 * 4, q  # a second round for some CTAs
                            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
                        ys[run] = torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook,
                                                                   off, k, "mma")
                    finally:
                        assert kbit._C._set_gemv_shared_x_run(0) == run
                assert_bitwise_equal(ys[4], ys[1])
                assert_bitwise_equal(ys[2], ys[1])
            finally:
                assert kbit._C._set_gemv_grouped_x_shared(1) == 2
        # mode 3: x shared at 4 token slots on K of 2 groups also with one unit a warp a round (the rule: in runs of 2
        # or 4 only; K = 480: a tail), zero-row experts and experts of 2 and 3 chunks, each run, against the reference
        # and bitwise against x staged (mode 0)
        assert kbit._C._set_gemv_grouped_x_shared(3) == 1
        try:
            E, N, K, counts = 8, 512, 480, [4, 4, 0, 8, 3, 4, 0, 9]
            T = sum(counts)
            qw, W_hat = weight(k, N, K, dtype, E=E)
            x, off = acts(T, K, dtype, "gshx-m3"), offsets(counts)
            q = plan(T, E, N, K, k, "mma")
            assert q["x_shared"] and q["token_slots"] == 4 and q["ring_stages"] == 2, q
            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
            fn = lambda xx, oo: torch.ops.kbit.grouped_gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale,  # noqa: E731
                                                                  qw.codebook, oo, k, "mma")
            y = fn(x, off)
            bitwise_over_runs(T, E, N, K, fn, x, off, y)
            assert kbit._C._set_gemv_grouped_x_shared(0) == 3
            try:
                assert not plan(T, E, N, K, k, "mma")["x_shared"]
                assert_bitwise_equal(fn(x, off), y)
            finally:
                assert kbit._C._set_gemv_grouped_x_shared(3) == 0
            check_graph_replay(fn, [x.clone(), off.clone()], [acts(T, K, dtype, "gshx-m3b"), offsets(counts[::-1])])
        finally:
            assert kbit._C._set_gemv_grouped_x_shared(1) == 3
        # where it does not apply: tiles not a multiple of the slots, 16 token slots, 1-3 token slots; 4 token slots on
        # K of fewer than 4 groups (Qwen3 MoE down, K = 512) only in runs of 2 or 4 (on 132 SMs 64 x 4 takes runs of 4:
        # 8192 units, 4 a warp either way), and not with the runs aid at one unit
        assert not plan(64 * 8, 64, 300, 2048, k, "mma")["x_shared"]
        assert not plan(64 * 12, 64, 512, 2048, k, "mma")["x_shared"]
        assert not plan(64 * 2, 64, 512, 2048, k, "mma")["x_shared"]
        p = plan(64 * 4, 64, 2048, 512, k, "mma")
        assert p["token_slots"] == 4 and p["x_shared"] == (p["x_shared_run"] >= 2), p
        if props.multi_processor_count == 132:
            assert p["x_shared"] and p["x_shared_run"] == 4, p
        assert plan(64 * 8, 64, 2048, 512, k, "mma")["x_shared"]
        assert kbit._C._set_gemv_shared_x_run(1) == 0
        try:
            assert not plan(64 * 4, 64, 2048, 512, k, "mma")["x_shared"]
            assert kbit._C._set_gemv_grouped_x_shared(3) == 1
            try:
                assert plan(64 * 4, 64, 2048, 512, k, "mma")["x_shared"]
            finally:
                assert kbit._C._set_gemv_grouped_x_shared(1) == 3
        finally:
            assert kbit._C._set_gemv_shared_x_run(0) == 1
        assert kbit._C._set_gemv_shared_x_run(4) == 0  # runs are x shared's only
        try:
            assert plan(64 * 2, 64, 512, 2048, k, "mma")["x_shared_run"] == 1
            assert plan(64 * 12, 64, 512, 2048, k, "mma")["x_shared_run"] == 1
        finally:
            assert kbit._C._set_gemv_shared_x_run(0) == 4
    finally:
        kbit._C._set_gemv_unit_warps(prev_warps)
    # the rule's own plans on the benchmark cells (64 x 8, Qwen3 MoE gate/up and down): one warp per unit, x shared
    # (at k = 2, 3 the halving stops at 2 warps per unit, and the step to 1 where x is shared takes them); 40 x 8 at
    # k = 2 (1280 units, under 2/3 of 2112 slots) keeps 2; the unit-slot aid below the rule caps the CTA (4 slots)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for T, E, N, K in ((512, 64, 512, 2048), (512, 64, 2048, 512)) + (((384, 48, 512, 2048),) if sms <= 144 else ()):
        p = plan(T, E, N, K, k)
        assert p["x_shared"] and p["warps_per_unit"] == 1, (T, E, N, K, p)
    # runs of 4 or 2 (the longer) where the tiles are a multiple of that x the slots and they keep the most units a warp
    # runs (the expected units, uniform here): on 132 SMs Qwen3 MoE down 64 x 8 (8192 units: 4 a warp either way; 128
    # tiles, 8-warp CTAs: runs of 4) and gate/up 512 x 8 (16384: 8; 32 tiles: runs of 2 in 16-warp CTAs, 4 in 8), not
    # gate/up 64 x 8 (2048 units, one a warp: runs would lengthen it) nor down 8 x 8
    for T, E, N, K in ((512, 64, 2048, 512), (512, 64, 512, 2048), (4096, 512, 512, 2048), (64, 8, 2048, 512)):
        p, units = plan(T, E, N, K, k), E * N // 16
        if p["x_shared"]:
            slots = p["warps"] * p["ctas_per_sm"] * sms
            fits = [r for r in (4, 2) if N // 16 % (r * p["warps"]) == 0 and
                    r * -(-units // (r * slots)) <= -(-units // slots)]
            assert p["x_shared_run"] == (fits[0] if fits else 1), (T, E, N, K, p)
    if sms == 132:
        p = plan(512, 64, 2048, 512, k)
        assert p["x_shared_run"] == (4 if p["warps"] == 8 else 2), p
        assert plan(512, 64, 512, 2048, k)["x_shared_run"] == 1
        p = plan(4096, 512, 512, 2048, k)  # (k = 2: 8-warp CTAs, runs of 4; session 40 run 5)
        assert p["x_shared_run"] == (4 if p["warps"] == 8 else 2), p
    if k == 2 and 3 * 1280 < 2 * 16 * sms <= 3 * 1536:  # (132 SMs: 2112 slots in 16-warp CTAs)
        p = plan(320, 40, 512, 2048, 2)
        assert not p["x_shared"] and p["warps_per_unit"] == 2, p
    if k == 4 and 128 <= sms and 2 * 8 * sms <= 3 * 1024:
        # 32 x 8 (1024 units): 8-warp CTAs, 128 on as many SMs, take them all in one round, where 16-warp CTAs would
        # leave half the SMs idle; their units fill 2/3 of those CTAs' slots, so one warp per unit (session 39 runs
        # 2-3; at k = 2 and 3 the halving stops at 4 warps per unit, two x-staged CTAs fitting an SM)
        p = plan(256, 32, 512, 2048, k)
        assert p["x_shared"] and p["warps_per_unit"] == 1 and p["warps"] == 8 and p["ring_stages"] == 2, p
        # the same from 3 warps per unit (K = 1536: 6 groups halve to 3): GLM MoE down, 8 x 8 (1024 units)
        p = plan(64, 8, 2048, 1536, k)
        assert p["x_shared"] and p["warps_per_unit"] == 1 and p["warps"] == 8, p
    prev_stages = kbit._C._set_gemv_resident_stages(4)  # the aid's stages, at most K's groups
    try:
        p = plan(512, 64, 512, 2048, k)  # K = 2048: 8 groups (k = 4, 5: 16-warp CTAs do not fit 4 stages, 8-warp do)
        assert p["x_shared"] and p["ring_stages"] == 4 and (k < 4 or p["warps"] == 8), p
        p = plan(512, 64, 2048, 512, k)
        assert p["x_shared"] and p["ring_stages"] == 2, p  # K = 512: 2 groups
    finally:
        assert kbit._C._set_gemv_resident_stages(prev_stages) == 4
    if k == 4:
        prev_slots = kbit._C._set_gemv_max_unit_slots(4)
        try:
            p = plan(512, 64, 512, 2048, 4)
            assert p["x_shared"] and p["warps"] == 4, p  # x shared in 4-warp CTAs
        finally:
            kbit._C._set_gemv_max_unit_slots(prev_slots)
    assert kbit._C._set_gemv_grouped_x_shared(2) == 1  # CTAs of 8 warps
    try:
        p = plan(512, 64, 512, 2048, k)
        assert p["x_shared"] and p["warps"] == 8 and p["warps_per_unit"] == 1, p
    finally:
        assert kbit._C._set_gemv_grouped_x_shared(1) == 2
    with pytest.raises(RuntimeError, match="_set_gemv_grouped_x_shared: mode must be 0 .*got 4"):
        kbit._C._set_gemv_grouped_x_shared(4)
    for bad in (3, 8):
        with pytest.raises(RuntimeError, match=f"_set_gemv_shared_x_run: run must be 0 .*got {bad}"):
            kbit._C._set_gemv_shared_x_run(bad)


def test_grouped_gemv_launch_plan_schedule():
    # kbit._C._grouped_gemv_launch_plan: the rows per chunk and the schedule's form a grouped GEMV
    # launch takes. Per warp where E <= 32 (static first chunks where T >= E); past 32 experts, one
    # row per chunk (T <= E: kbit.Experts' decode call) takes the per-CTA row form, more rows the
    # scans; the aid's form 3 takes the row form at E <= 32 too, form 0 the scans everywhere; the
    # shuffle decode always the scans.
    plan = kbit._C._grouped_gemv_launch_plan
    want = {(8, 8): "per_warp_static", (4, 8): "per_warp", (8, 128): "per_cta_rows", (128, 128): "per_cta_rows",
            (64, 1024): "per_cta_rows", (200, 128): "per_cta_scans", (40, 33): "per_cta_scans"}
    for (T, E), schedule in want.items():
        p = plan(T, E, 512, 2048, 4)
        assert p["schedule"] == schedule, (T, E, p)
        assert p["chunk_rows"] == -(-T // E) and p["token_slots"] == min(p["chunk_rows"], 16), (T, E, p)
    assert plan(4, 8, 512, 2048, 4, "shuffle")["schedule"] == "per_cta_scans"
    assert plan(8, 128, 512, 2048, 4, "shuffle")["schedule"] == "per_cta_scans"
    for form, small, large in ((3, "per_cta_rows", "per_cta_rows"), (0, "per_cta_scans", "per_cta_scans"),
                               (1, "per_warp", "per_cta_scans")):
        assert kbit._C._set_gemv_grouped_schedule(form) == 2
        try:
            assert plan(4, 8, 512, 2048, 4)["schedule"] == small
            assert plan(8, 128, 512, 2048, 4)["schedule"] == large
        finally:
            assert kbit._C._set_gemv_grouped_schedule(2) == form
    # the warps per unit at one token slot (Qwen3 MoE gate/up, 8 groups, and down, 2 groups; E x 1 row): halved while
    # the units fill every slot at half the warps; then by the critical path (rounds of the slots x a unit's items per
    # warp) 2 where theirs is at most 3/4 of one warp's, else 1 where the units fill 2/3 of the slots at one warp per
    # unit (8-warp CTAs: slots = 8 x the CTAs per SM x SMs; session 41 runs 4-6). The launcher counts the slots with
    # the plain grouped kernel's CTAs per SM, the plan reports its own kernel's (past 32 experts the row schedule's);
    # the mirror takes them to be equal (8-warp CTAs of 128 registers: 2 an SM on the H100 / H200 either way)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for k in KS:
        for N, K, experts in ((512, 2048, (24, 32, 40, 48, 56, 64, 72, 256)), (2048, 512, (8, 12, 16, 24, 32, 512))):
            groups = K // 256
            for E in experts:
                p, units = plan(E, E, N, K, k), N // 16 * E
                assert p["token_slots"] == 1 and p["warps"] == 8, (k, E, p)
                slots = 8 * p["ctas_per_sm"] * sms
                if 2 * units >= slots or groups == 2:  # the loop ends at 2 warps per unit or 1
                    path = {w: -(-units * w // slots) * -(-groups // w) for w in (1, 2)}
                    want_warps = 2 if 4 * path[2] <= 3 * path[1] else 1 if 3 * units >= 2 * slots else 2
                    assert p["warps_per_unit"] == want_warps, (k, N, K, E, slots, p)
        # 8 groups, fewer units than twice the 8-warp CTAs (the loop keeps 8 warps a unit): 4 where the units fill at
        # least 2/3 of the slots at 4 warps a unit (twice the CTAs), else 8 (session 59 runs 15 and 18: gate/up 12
        # and 16 x 1 faster at 4 at k = 2, 4, 5; 9 x 1 slower)
        for E in (8, 9, 10, 12, 16):
            p = plan(E, E, 512, 2048, k)
            units, ctas = 32 * E, p["ctas_per_sm"] * sms
            assert p["token_slots"] == 1 and p["warps"] == 8, (k, E, p)
            if units < 2 * ctas:
                assert p["warps_per_unit"] == (4 if 3 * units >= 2 * (2 * ctas) else 8), (k, E, ctas, p)
    with pytest.raises(RuntimeError, match="_grouped_gemv_launch_plan: needs T >= 1, 1 <= E <= 1024"):
        plan(4, 1025, 512, 2048, 4)
    with pytest.raises(RuntimeError, match="_grouped_gemv_launch_plan: needs T >= 1"):
        plan(0, 8, 512, 2048, 4)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemv_row_schedule(dtype, gen, poisoned_cuda):
    # One row per chunk with T <= E rows (RowSchedule: each expert's rows written into a row -> expert
    # map, two CTA barriers) against the reference and bitwise against the scans (form 0): every row
    # is summed alike. Decode over many experts (8 random experts of 128 / 512 / 1024 with 1 row, 3
    # experts of 40 sharing 40 rows), every expert one row (T = E = 64), one expert with all rows,
    # the first and the last expert with rows; the row form at E <= 32 (form 3); offsets out of order
    # (the scans take over: rows no expert owns come back NaN where the scans leave them) and
    # clamped ones (negative, past T: in order, so the row form stays); CUDA-graph replay with
    # other offsets (the map is rebuilt on every replay).
    def cases():
        for E, K, active in ((128, 2080, None), (512, 544, None), (1024, 96, None), (40, 2080, {0: 13, 20: 1, 39: 26}),
                             (33, 544, {32: 33}), (64, 96, {e: 1 for e in range(64)}), (8, 2080, {0: 1, 5: 2, 7: 1})):
            if active is None:
                active = {int(e): 1 for e in torch.randperm(E, generator=gen)[:8]}
            counts = [active.get(e, 0) for e in range(E)]
            yield E, K, offsets(counts), counts
        T = 10
        for o in ([0, 6, 3, 8, 10] + [10] * 36, [-5, 2, 4, 6, 99] + [99] * 36, [0, 2, 3, 4, 7] + [7] * 36):
            yield 40, 96, torch.tensor(o, dtype=torch.int32, device=DEV), [T] + [0] * 39  # T rows
    for E, K, off, counts in cases():
        T = sum(counts)
        form = 2 if E > 32 else 3
        qw, W_hat = weight(4, 40, K, dtype, E=E)
        x = acts(T, K, dtype, f"rowsched{E}-{K}")
        fn = lambda xx, oo: torch.ops.kbit.grouped_gemv_gemm(xx, qw.packed, qw.absmax, qw.row_scale,  # noqa: E731
                                                              qw.codebook, oo, 4, "mma")
        assert kbit._C._set_gemv_grouped_schedule(0) == 2
        try:
            y_scans = fn(x, off)
        finally:
            assert kbit._C._set_gemv_grouped_schedule(form) == 0
        try:
            assert kbit._C._grouped_gemv_launch_plan(T, E, 40, K, 4, "mma")["schedule"] == "per_cta_rows", E
            if int(off[-1]) == T and int(off[0]) == 0 and bool((off[1:] >= off[:-1]).all()):
                check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
            y = fn(x, off)
            assert_bitwise_equal(y, y_scans)
            assert_bitwise_equal(fn(x, off), y)
            other = off.flip(0).neg().add(int(off[-1]) + int(off[0]))  # the counts reversed
            check_graph_replay(fn, [x.clone(), off.clone()], [acts(T, K, dtype, f"rowsched{E}b"), other])
        finally:
            assert kbit._C._set_gemv_grouped_schedule(2) == form


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemv_chunk_rows_aid(dtype, poisoned_cuda):
    # kbit._C._set_gemv_grouped_chunk_rows (a tuning aid) overrides the rows per chunk of grouped GEMV
    # launches (the rule: the mean rows per expert rounded up, 1 when T < E): decode over many experts
    # with a few experts of several rows (chunks of 1 re-read an expert's tiles for every row), the
    # per-warp schedule (E <= 32) and the per-CTA one (E = 128), every chunk size against the
    # reference; the shuffle decode takes at most 4 (the aid's 8 is clamped there); bad values raise
    for E, K, active in ((32, 2080, {3: 4, 17: 3, 31: 1}), (128, 544, {0: 4, 63: 4, 64: 2, 127: 5})):
        qw, W_hat = weight(4, 40, K, dtype, E=E)
        counts = [active.get(e, 0) for e in range(E)]
        x = acts(sum(counts), K, dtype, f"chunkrows{E}")
        off = offsets(counts)
        o = off.tolist()
        ref = torch.cat([x[o[e]:o[e + 1]].double() @ W_hat[e].T for e in range(E)])
        for rows in (1, 2, 4, 8, 16):
            assert kbit._C._set_gemv_grouped_chunk_rows(rows) == 0
            try:
                check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")
                y = torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4,
                                                     "shuffle")
                assert float((y.double() - ref).norm() / ref.norm()) <= GEMM_RTOL[dtype]
            finally:
                assert kbit._C._set_gemv_grouped_chunk_rows(0) == rows
    with pytest.raises(RuntimeError, match="_set_gemv_grouped_chunk_rows: rows must be 0 .* to 16; got 17"):
        kbit._C._set_gemv_grouped_chunk_rows(17)
    with pytest.raises(RuntimeError, match="_set_gemv_grouped_chunk_rows: rows must be 0 .* to 16; got -1"):
        kbit._C._set_gemv_grouped_chunk_rows(-1)


def test_grouped_gemm_takes_the_gemv_where_it_measured_fastest(poisoned_cuda):
    # the measured H100 rule (grouped_gemv_wins, sessions 14 and 16): up to 8 tokens per expert on
    # average (any E), up to 16 with <= 8 experts or with <= 16 and K > 512 -> the grouped GEMV, mma
    # decode (decode='auto', gemv_auto_decode); beyond, a tensor-core kernel (the tile kernel from 256
    # experts with a token). Other GPUs (no table): the results are checked against the reference only
    E, N, K = 256, 32, 512
    qw, W_hat = weight(4, N, K, torch.float16, E=E)
    x = acts(E, K, torch.float16, "gemv-rule")
    y = check_grouped(qw, W_hat, x, [1] * E, torch.float16)
    off = offsets([1] * E)
    gemv = torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4)
    on_table_gpu = _table_source(torch.cuda.get_device_properties(0), _tables()) != "heuristic"
    if on_table_gpu:  # (the grouped rules are the H100's measurements, taken on every GPU with a table)
        assert_bitwise_equal(y, gemv)
        # decode='auto' is the mma decode (gemv_auto_decode)
        assert_bitwise_equal(gemv, torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale,
                                                                    qw.codebook, off, 4, "mma"))
        assert kbit._C.grouped_gemm_dispatch(E, E, N, K, 4)[:2] == ("gemv", "mma")
        # 8 tokens per expert on average: the GEMV; 9: the tile kernel (256 experts with a token)
        x8 = acts(8 * E, K, torch.float16, "gemv-rule8")
        eight = offsets([8] * E)
        assert_bitwise_equal(kbit.grouped_gemm(x8, qw, eight), torch.ops.kbit.grouped_gemv_gemm(
            x8, qw.packed, qw.absmax, qw.row_scale, qw.codebook, eight, 4))
        assert kbit._C.grouped_gemm_dispatch(8 * E, E, N, K, 4)[:2] == ("gemv", "mma")
        x9 = acts(9 * E, K, torch.float16, "gemv-rule9")
        nine = offsets([9] * E)
        assert_bitwise_equal(kbit.grouped_gemm(x9, qw, nine), torch.ops.kbit.grouped_tile_gemm(
            x9, qw.packed, qw.absmax, qw.row_scale, qw.codebook, nine, 4))
        assert kbit._C.grouped_gemm_dispatch(9 * E, E, N, K, 4)[:2] == ("tile", "")
    # (E, K, tokens per expert) -> (path, the GEMV's decode under decode='auto'; 64 x 9: the tile kernel,
    # grouped_tile_wins); the mma GEMV and the small-M kernel can give the same bits, so the choice is
    # asserted through the query
    for E, K, counts, want in ((8, 2080, [4, 0, 9, 3, 4, 4, 4, 4], ("gemv", "mma")), (16, 2080, [4] * 16, ("gemv", "mma")),
                               (8, 2080, [16, 0, 9, 3, 20, 8, 4, 4], ("gemv", "mma")), (16, 2080, [16] * 16, ("gemv", "mma")),
                               (64, 2080, [1] * 64, ("gemv", "mma")), (64, 2080, [4] * 64, ("gemv", "mma")),
                               (64, 2080, [8] * 64, ("gemv", "mma")), (64, 2080, [9] * 64, ("tile", "")),
                               (16, 2080, [17] * 16, ("kernel", "")),
                               (8, 512, [2] * 8, ("gemv", "mma")), (8, 512, [16] * 8, ("gemv", "mma")),
                               (16, 512, [4] * 16, ("gemv", "mma")), (16, 512, [8] * 16, ("gemv", "mma")),
                               (16, 512, [9] * 16, ("kernel", ""))):
        qw, W_hat = weight(4, 40, K, torch.float16, E=E)
        x = acts(sum(counts), K, torch.float16, f"gemv-rule-{E}-{K}")
        y = check_grouped(qw, W_hat, x, counts, torch.float16)
        off = offsets(counts)
        if on_table_gpu:
            assert kbit._C.grouped_gemm_dispatch(sum(counts), E, 40, K, 4)[:2] == want
            args = (x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4)
            expect = (torch.ops.kbit.grouped_gemv_gemm(*args, want[1]) if want[0] == "gemv"
                      else torch.ops.kbit.grouped_tile_gemm(*args) if want[0] == "tile"
                      else torch.ops.kbit.grouped_mma_gemm(*args))
            assert_bitwise_equal(y, expect)
        else:
            assert kbit._C.grouped_gemm_dispatch(sum(counts), E, 40, K, 4)[2] == "heuristic"
    assert kbit._C.grouped_gemm_dispatch(2000, 2000, 40, 512, 4)[:2] == ("dequant_cublas", "")
    with pytest.raises(RuntimeError, match="grouped_gemm_dispatch needs T, N, K >= 0 and E >= 1"):
        kbit._C.grouped_gemm_dispatch(1, 0, 40, 512, 4)


def test_grouped_gemm_cuda_graph():
    E, N, K = 8, 257, 1024
    qw, _ = weight(4, N, K, torch.float16, E=E)
    x0, x1 = acts(64, K, torch.float16, "gg0"), acts(64, K, torch.float16, "gg1")
    o0, o1 = offsets([8] * 8), offsets([0, 30, 0, 0, 4, 30, 0, 0])
    check_graph_replay(lambda x, o: kbit.grouped_gemm(x, qw, o), [x0.clone(), o0.clone()], [x1, o1])


@pytest.mark.parametrize("E", [1, 8, 64, 512])
@pytest.mark.parametrize("per_expert", [1, 4, 24])
def test_grouped_gemm_cuda_many_experts(E, per_expert, gen, poisoned_cuda):
    # MoE decode / prefill shapes: random expert choice, so many experts get 0 tokens
    N, K = 40, 288
    qw, W_hat = weight(4, N, K, torch.float16, E=E)
    T = max(1, E * per_expert // 8)
    counts = torch.multinomial(torch.ones(E), T, replacement=True, generator=gen).bincount(minlength=E).tolist()
    x = acts(T, K, torch.float16, f"many{E}-{per_expert}")
    check_grouped(qw, W_hat, x, counts, torch.float16)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemm_cuda_one_expert_takes_all(dtype, poisoned_cuda):
    # one expert with several hundred tokens: chunks of 64 rows re-read the expert's tiles
    E, N, K = 6, 100, 544
    qw, W_hat = weight(5, N, K, dtype, E=E)
    counts = [0, 0, 333, 0, 0, 0]
    check_grouped(qw, W_hat, acts(333, K, dtype, "allin"), counts, dtype)


@pytest.mark.parametrize("dtype", ACT_DTYPES, ids=str)
def test_grouped_gemv_shared_schedule_lookup(dtype, gen, poisoned_cuda):
    # Above 32 experts the grouped GEMV's schedule is per CTA in shared memory, and a warp finds a
    # unit's expert with two ballots (TcSchedule::unit_warp: the group of 32 experts, then the
    # expert; the 16-slot kernel keeps the binary search). Rows at group edges (experts 0, 31, 32, 63,
    # the last), empty groups, E a multiple of 32 and not (the last group partly past E), the
    # 1024-expert limit, 1 and 4 rows per chunk (T < E and T ~ 4 E), 12 rows (the 16-slot kernel)
    for E, N, K, hot in ((1000, 17, 96, (0, 31, 32, 63, 500, 999)), (1024, 17, 96, (31, 1023)),
                         (40, 33, 544, None), (33, 40, 96, None)):
        qw, W_hat = weight(4, N, K, dtype, E=E)
        if hot is not None:
            counts = [1 if e in hot else 0 for e in range(E)]
            cases = [counts]
        else:
            cases = [torch.multinomial(torch.ones(E), m * E, replacement=True, generator=gen).bincount(minlength=E).tolist()
                     for m in (4, 12)]
            cases[0][E // 2] = 0
        for counts in cases:
            x = acts(sum(counts), K, dtype, f"sched{E}-{sum(counts)}")
            check_grouped(qw, W_hat, x, counts, dtype, gemv_decode="mma")


def test_grouped_gemm_cuda_more_experts_than_the_kernel_schedules(poisoned_cuda):
    # E > 1024 takes the (host-synchronizing) dequantize + cuBLAS path
    E, N, K = 1030, 16, 32
    qw, W_hat = weight(2, N, K, torch.float16, E=E)
    counts = [0] * E
    counts[3], counts[1029], counts[500] = 2, 1, 5
    check_grouped(qw, W_hat, acts(8, K, torch.float16, "e1030"), counts, torch.float16)


@pytest.mark.parametrize("op", ["grouped_gemm", "grouped_gemv_gemm", "grouped_mma_gemm", "grouped_tile_gemm"])
@pytest.mark.parametrize("bad", ["decreasing", "past_T", "negative", "short_of_T"])
@pytest.mark.parametrize("E", [4, 40])
def test_grouped_gemm_cuda_invalid_offsets_stay_in_bounds(bad, op, E):
    # The CUDA kernel cannot check offsets without a host sync. Invalid values must not fault
    # or touch memory outside x / y, every row is owned by at most one expert, and rows no
    # expert owns come back NaN (never stale memory). check_offsets=True raises instead.
    # E = 40: the GEMV's per-CTA schedule (more than 32 experts), the bad values at the edge of
    # its first group of 32 experts (experts 30-33 own the rows)
    N, K, T = 33, 96, 10
    qw, W_hat = weight(4, N, K, torch.float16, E=E)
    x = acts(T, K, torch.float16, "badoff")
    if E == 4:
        o = {"decreasing": [0, 6, 3, 8, 10], "past_T": [0, 2, 4, 6, 99], "negative": [-5, 2, 4, 6, 10],
             "short_of_T": [0, 2, 3, 4, 7]}[bad]
    else:
        o = [0] * 31 + [2, 5, 7] + [10] * 7  # experts 30, 31, 32, 33 own 2, 3, 2, 3 rows
        at, value = {"decreasing": (32, 1), "past_T": (33, 99), "negative": (31, -5), "short_of_T": (34, 7)}[bad]
        o[at] = value
        if bad == "short_of_T":
            o[35:] = [7] * 6
    off = torch.tensor(o, dtype=torch.int32, device=DEV)
    if op == "grouped_gemm":
        y = kbit.grouped_gemm(x, qw, off)
    else:
        y = getattr(torch.ops.kbit, op)(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, 4)
    torch.cuda.synchronize()
    # the kernel's documented reading of the offsets: begin_e = running max of clamp(o, 0, T)
    run, begin = 0, []
    for v in o:
        run = max(run, min(max(v, 0), T))
        begin.append(run)
    owned = torch.zeros(T, dtype=torch.bool)
    for e in range(E):
        lo, hi = begin[e], begin[e + 1]
        if hi > lo:
            owned[lo:hi] = True
            ref = x[lo:hi].double() @ W_hat[e].T
            assert float((y[lo:hi].double() - ref).norm() / ref.norm()) <= 1e-3
    assert torch.isnan(y[~owned.to(DEV)]).all()
    if op == "grouped_gemm":
        with pytest.raises(ValueError, match="expert_offsets"):
            kbit.grouped_gemm(x, qw, off, check_offsets=True)


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------
def test_wrong_device_inputs_raise():
    qw, _ = weight(4, 17, 96)
    qh = qw.cpu()
    x = acts(3, 96, torch.float16, "dev")
    with pytest.raises(ValueError, match="x is on cpu"):
        kbit.gemm(x.cpu(), qw)
    with pytest.raises(ValueError, match="x is on cuda"):
        kbit.gemm(x, qh)
    with pytest.raises(RuntimeError, match="device"):
        torch.ops.kbit.gemm(x.cpu(), qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    with pytest.raises(RuntimeError, match="device"):
        torch.ops.kbit.gemm(x, qw.packed, qw.absmax, qw.row_scale.cpu(), qw.codebook, 4)
    qe, _ = weight(4, 17, 96, E=3)
    off = torch.tensor([0, 1, 1, 3], dtype=torch.int32)
    with pytest.raises(ValueError, match="expert_offsets"):
        kbit.grouped_gemm(x, qe, off)  # offsets on the CPU
    with pytest.raises(ValueError, match="x is on cpu"):
        kbit.grouped_gemm(x.cpu(), qe, off)


def _tables():
    """{device name: table} of the generated header (csrc/cuda/gemm/tc_dispatch_table.h), read from its
    source by the reader that belongs to its writer (benchmarks/tune_dispatch.py)."""
    from benchmarks.tune_dispatch import HEADER, read_tables
    return {tb["device"]: tb for tb in read_tables(open(HEADER).read())}


def _table_source(props, tables):
    """The table tc_dispatch.cpp takes on this GPU: of its name and chip (compute capability and SM count),
    else its chip's with the longest name in common (the first on a tie), else "heuristic"."""
    chip = [d for d, tb in tables.items()
            if (tb["major"], tb["minor"], tb["sms"]) == (props.major, props.minor, props.multi_processor_count)]
    if props.name in chip:
        return props.name
    common = [len(os.path.commonprefix([d, props.name])) for d in chip]
    return chip[common.index(max(common))] if chip else "heuristic"


def _table_row(rows, N, K):
    """The row tc_crossover_row takes for an N x K weight: the shape's own, else the size row of the
    largest size <= N*K, else the first size row."""
    own = [r for r in rows if (r["shape_n"], r["shape_k"]) == (N, K)]
    if own:
        return own[0]
    sized = [r for r in rows if not r["shape_n"]]  # ascending
    below = [r for r in sized if r["weights"] <= N * K]
    return below[-1] if below else sized[0]


OP_OF_PATH = {"gemv": "gemv_gemm", "kernel": "mma_gemm", "tile": "tile_gemm", "wgmma": "wgmma_gemm", "dequant_cublas": "dequant_cublas_gemm"}


def test_gemm_dispatch_follows_the_measured_table():
    # the crossovers come from csrc/cuda/gemm/tc_dispatch_table.h: the table of the GPU's chip (compute
    # capability and SM count) and name, else its chip's with the longest name in common (_table_source);
    # elsewhere from the heuristic. Either
    # way small M goes to the GEMV or the small-M kernel, very large M to dequantize + cuBLAS, and gemm's
    # result matches the path it names.
    from benchmarks.tune_dispatch import SMALL_KERNELS_MAX_M  # tied to kTileTimedMaxM (benchmarks/tests)
    props = torch.cuda.get_device_properties(0)
    path, source = kbit._C.gemm_dispatch(1, 5120, 2048, 4)
    tables = _tables()
    assert source == _table_source(props, tables)
    assert kbit._C.gemm_dispatch(8192, 5120, 2048, 4)[0] == "dequant_cublas"  # past every table's grid (4096)
    if source == "heuristic":
        assert path == "kernel"
    else:
        rows = tables[source]["rows"]
        assert len(rows) >= 2
        shapes = {(r["shape_n"], r["shape_k"]) for r in rows if r["shape_n"]}
        for r in rows:  # a shape's own row; for a size row, a weight of exactly its size that has no row of its own
            max_small, max_tile, min_wgmma, max_gemv = (r[f] for f in ("max_kernel_m", "max_tile_m", "min_wgmma_m",
                                                                       "max_gemv_m"))
            if r["shape_n"]:
                N, K = r["shape_n"], r["shape_k"]
            else:
                N, K = next((r["weights"] // c, c) for c in (2048, 1024, 512, 256) if (r["weights"] // c, c) not in shapes)
            assert _table_row(rows, N, K) is r
            for k in (2, 4):
                a, b, w = max_small[k - 2], max(max_tile[k - 2], max_small[k - 2]), min_wgmma[k - 2]
                gv = min(max_gemv[k - 2], kbit._fake.GEMV_MAX_ROWS)

                def tiled(M):  # the tile kernel was timed only to SMALL_KERNELS_MAX_M (kTileTimedMaxM) where wgmma won
                    if w and M >= w and kbit._C.wgmma_gemm_runs(k, M):
                        return "wgmma"
                    return "tile" if M <= SMALL_KERNELS_MAX_M or not w else "dequant_cublas"
                if gv:
                    assert kbit._C.gemm_dispatch(1, N, K, k)[0] == "gemv"
                    assert kbit._C.gemm_dispatch(gv, N, K, k)[0] == "gemv"
                    assert kbit._C.gemm_dispatch(gv + 1, N, K, k)[0] != "gemv"
                if a > gv:
                    assert kbit._C.gemm_dispatch(a, N, K, k)[0] == "kernel"
                lo = max(a, gv)  # the last M of the scalar GEMV or the small-M kernel
                if b > lo:
                    assert kbit._C.gemm_dispatch(lo + 1, N, K, k)[0] == tiled(lo + 1)
                    assert kbit._C.gemm_dispatch(b, N, K, k)[0] == tiled(b)
                    if lo + 1 < w <= b:  # w = lo + 1: M = w - 1 = lo is not a tile kernel's (checked above)
                        assert kbit._C.gemm_dispatch(w - 1, N, K, k)[0] == tiled(w - 1)
                        assert kbit._C.gemm_dispatch(w, N, K, k)[0] == tiled(w)
                assert kbit._C.gemm_dispatch(b + 1, N, K, k)[0] == "dequant_cublas"
                # bf16 activations: the tiled range ends at the bf16 column's M where it has one, else at fp16's
                b16 = max(r["max_tile_m_bf16"][k - 2], max_small[k - 2]) if r["max_tile_m_bf16"][k - 2] else b
                if b16 > lo:
                    assert kbit._C.gemm_dispatch(b16, N, K, k, dtype="bfloat16")[0] == tiled(b16)
                assert kbit._C.gemm_dispatch(b16 + 1, N, K, k, dtype="bfloat16")[0] == "dequant_cublas"
                # bf16 activations: the GEMV's range ends at the bf16 column's M where it has one (never below fp16's)
                gv16 = min(r["max_gemv_m_bf16"][k - 2] or max_gemv[k - 2], kbit._fake.GEMV_MAX_ROWS)
                assert gv16 >= gv
                if gv16:
                    assert kbit._C.gemm_dispatch(gv16, N, K, k, dtype="bfloat16")[0] == "gemv"
                assert kbit._C.gemm_dispatch(gv16 + 1, N, K, k, dtype="bfloat16")[0] != "gemv"
                for M in (1, lo, lo + 1, gv16, gv16 + 1):  # elsewhere below the tiled range's end, fp16's path
                    if gv < M <= gv16:
                        assert kbit._C.gemm_dispatch(M, N, K, k, dtype="bfloat16")[0] == "gemv"
                    elif M <= min(b, b16):
                        assert kbit._C.gemm_dispatch(M, N, K, k, dtype="bfloat16") == kbit._C.gemm_dispatch(M, N, K, k)
    with pytest.raises(RuntimeError, match="dtype must be 'float16' or 'bfloat16'"):
        kbit._C.gemm_dispatch(1, 5120, 2048, 4, dtype="float32")
    qw, W_hat = weight(4, 257, 5120)
    for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
        for M in (1, 4, 16, 17, 40, 200, 300, 1000, 1025):
            x = acts(M, 5120, dtype, "dispatch")
            op = getattr(torch.ops.kbit, OP_OF_PATH[kbit._C.gemm_dispatch(M, 257, 5120, 4, dtype=name)[0]])
            assert_bitwise_equal(kbit.gemm(x, qw), op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4))


# ---------------------------------------------------------------------------------------------
# tuning overrides (read once per process: each case runs in a fresh interpreter)
# ---------------------------------------------------------------------------------------------
_TUNING_SNIPPET = """
import torch, kbit
torch.manual_seed(0)
W = torch.randn(300, 2048, dtype=torch.float16)
qw = kbit.quantize(W, k=4).to("cuda")
x = torch.randn(3, 2048, dtype=torch.float16, device="cuda")
W_hat = kbit.dequantize(qw, torch.float32).double()
ref = x.double() @ W_hat.T
for op in (torch.ops.kbit.mma_gemm, torch.ops.kbit.tile_gemm):
    y = op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    err = float((y.double() - ref).norm() / ref.norm())
    assert err <= 1e-3, err
print("ok")
"""


@pytest.mark.parametrize("name,value,ok", [
    ("KBIT_TUNE_WARPS_PER_UNIT", "4", True), ("KBIT_TUNE_WARPS_PER_UNIT", "1", True),
    ("KBIT_TUNE_WARPS_PER_UNIT", "3", False), ("KBIT_TUNE_WARPS_PER_UNIT", "x", False),
    ("KBIT_TUNE_CTA_SPLITS", "5", True), ("KBIT_TUNE_CTA_SPLITS", "-1", False)])
def test_tuning_overrides_run_correctly_or_are_rejected(name, value, ok):
    # the sweep aids of benchmarks/README.md: a forced setting still computes x @ W^T and says
    # it is on; a bad value fails the call with a message naming the variable
    env = {**os.environ, name: value}
    proc = subprocess.run([sys.executable, "-c", _TUNING_SNIPPET], capture_output=True, text=True, env=env,
                          timeout=300)
    if ok:
        assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]
        assert f"{name}={value} forces" in proc.stderr
    else:
        assert proc.returncode != 0 and name in proc.stderr, proc.stderr[-2000:]
