"""The MoE glue ops of kbit.Experts (kbit::moe_route, kbit::moe_gather, kbit::moe_route_gather, kbit::silu_and_mul,
kbit::moe_combine, and the gate/up call kbit::grouped_gemm_silu_and_mul) against
pure-PyTorch references (float64 where there is arithmetic), on the CPU and (gpu marker) on CUDA, where
moe_route's one-CTA kernel must give moe_route_aten's rows exactly."""
import pytest
import torch

import kbit  # noqa: F401  (registers torch.ops.kbit)
from conftest import seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def route_reference(ids, E):
    """Stable sort of the (token, slot) pairs by expert, pairs of no expert (id outside [0, E)) as E - 1's."""
    flat = ids.reshape(-1).long().cpu()
    key = torch.where((flat >= 0) & (flat < E), flat, torch.full_like(flat, E - 1))
    keys = key.tolist()
    order = sorted(range(len(keys)), key=lambda p: (keys[p], p))
    offsets = [sum(1 for v in keys if v < e) for e in range(E + 1)]
    pair_row = [0] * flat.numel()
    for r, p in enumerate(order):
        pair_row[p] = r
    topk = ids.shape[1]
    return offsets, [p // topk for p in order], pair_row


def routing(T, topk, E, dtype, gen, invalid=0.0):
    ids = torch.stack([torch.randperm(E, generator=gen)[:topk] for _ in range(T)]) if topk <= E else \
        torch.randint(0, E, (T, topk), generator=gen)
    if invalid:
        bad = torch.rand(T, topk, generator=gen) < invalid
        ids = torch.where(bad, torch.randint(-3, 3, (T, topk), generator=gen) + torch.where(
            torch.rand(T, topk, generator=gen) < 0.5, E, 0), ids)
    return ids.to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
def test_moe_route_matches_a_stable_sort(device, id_dtype):
    gen = torch.Generator().manual_seed(seed_for(f"moe-route-{device}-{id_dtype}"))
    # decode (1 / 7 tokens over 128 / 512 experts), every expert one pair, many pairs per expert,
    # ids outside [0, E) (negative, E and past it: no expert), E = 1, and sizes past the CUDA kernel's
    # (4096 pairs, 8191 experts: the ATen path)
    for T, topk, E, invalid in ((1, 8, 128, 0.0), (7, 8, 512, 0.0), (64, 1, 64, 0.0), (40, 6, 3, 0.0),
                                (33, 4, 16, 0.3), (5, 2, 1, 0.5), (700, 8, 64, 0.05), (3, 4, 9000, 0.0)):
        ids = routing(T, topk, E, id_dtype, gen, invalid).to(device)
        offsets, row_token, pair_row = torch.ops.kbit.moe_route(ids, E)
        want_off, want_tok, want_row = route_reference(ids, E)
        assert offsets.dtype == torch.int32 and row_token.dtype == torch.int64 and pair_row.dtype == torch.int32
        assert offsets.device.type == device
        assert offsets.cpu().tolist() == want_off, (T, topk, E)
        assert row_token.cpu().tolist() == want_tok, (T, topk, E)
        assert pair_row.cpu().tolist() == want_row, (T, topk, E)


@pytest.mark.parametrize("device", DEVICES)
def test_moe_ops_empty(device):
    # no tokens, or no slots: empty rows, offsets all zero, an all-zero (T, H) combine; no rows for
    # silu_and_mul
    for T, topk in ((0, 8), (3, 0)):
        ids = torch.zeros(T, topk, dtype=torch.int64, device=device)
        offsets, row_token, pair_row = torch.ops.kbit.moe_route(ids, 16)
        assert offsets.tolist() == [0] * 17 and row_token.numel() == 0 and pair_row.numel() == 0
        out = torch.ops.kbit.moe_combine(torch.empty(0, 40, dtype=torch.float16, device=device),
                                         torch.empty(T, topk, device=device), ids, pair_row, 16)
        assert out.shape == (T, 40) and out.dtype == torch.float16 and (out == 0).all()
    assert torch.ops.kbit.silu_and_mul(torch.empty(0, 8, device=device)).shape == (0, 4)
    assert torch.ops.kbit.moe_gather(torch.empty(0, 8, device=device),
                                     torch.empty(0, dtype=torch.int64, device=device)).shape == (0, 8)


@pytest.mark.gpu
def test_moe_route_cuda_kernel_is_the_aten_path(poisoned_cuda):
    # the one-CTA kernel (up to 4096 pairs, 8191 experts) against the CPU op (ATen's stable sort),
    # bitwise, at its limits (4096 pairs over 8191 experts: 49280 bytes of shared memory, past the
    # default 48 KB) and around a warp's 32 pairs; and CUDA-graph replay with other ids
    gen = torch.Generator().manual_seed(seed_for("moe-route-kernel"))
    for T, topk, E in ((1, 1, 1), (4, 8, 32), (33, 1, 8191), (512, 8, 512), (4096, 1, 7), (3, 11, 40),
                       (4096, 1, 8191), (2048, 2, 8191)):
        ids = routing(T, topk, E, torch.int64, gen, invalid=0.1)
        got = torch.ops.kbit.moe_route(ids.cuda(), E)
        want = torch.ops.kbit.moe_route(ids, E)
        for g, w in zip(got, want):
            assert_bitwise_equal(g.cpu(), w)
    ids = routing(16, 8, 128, torch.int64, gen).cuda()
    check_graph_replay(lambda i: torch.ops.kbit.moe_route(i, 128), [ids.clone()],
                       [routing(16, 8, 128, torch.int64, gen).cuda()])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
def test_moe_gather(device, dtype, id_dtype, request):
    # out[r] = x[row_token[r]], bit for bit, on moe_route's rows and on any in-range rows (repeats, all
    # rows of one token, a strided row_token); rows of 1, 3, 7, 96, 300 and 2048 elements (every copy width:
    # 16 / 8 / 4 / 2 bytes), x with a row stride of H + 1 (the op's own contiguous copy) and x starting at an
    # odd element (a view: 2-byte copies in fp16 / bf16); a CUDA output poisoned beforehand
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"gather-{device}-{dtype}-{id_dtype}"))
    for T, topk, E, H in ((1, 8, 128, 2048), (9, 4, 16, 96), (3, 2, 4, 300), (5, 3, 5, 7), (4, 1, 2, 3),
                          (2, 2, 3, 1)):
        x = torch.randn(T, H + 1, generator=gen).to(dtype).to(device)
        for xv in (x[:, :H].contiguous(), x[:, :H], x.view(-1)[1:1 + T * H].view(T, H)):
            _, row_token, _ = torch.ops.kbit.moe_route(routing(T, topk, E, torch.int64, gen).to(device), E)
            for rows in (row_token, torch.randint(0, T, (11,), generator=gen).to(device),
                         torch.zeros(4, dtype=torch.int64, device=device),
                         torch.randint(0, T, (22,), generator=gen).to(device)[::2]):
                rows = rows.to(id_dtype)
                out = torch.ops.kbit.moe_gather(xv, rows)
                assert out.shape == (rows.numel(), H) and out.dtype == dtype and out.is_contiguous()
                assert_bitwise_equal(out.cpu(), xv.cpu()[rows.long().cpu()])
    # P = 0 rows, and x of no tokens with no rows
    assert torch.ops.kbit.moe_gather(x, torch.empty(0, dtype=id_dtype, device=device)).shape == (0, H + 1)
    assert torch.ops.kbit.moe_gather(x[:0], torch.empty(0, dtype=id_dtype, device=device)).shape == (0, H + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_moe_gather_rows_out_of_range(device):
    # a row_token entry outside [0, T) (not moe_route's): an error on the CPU; on CUDA (no host sync to
    # check it) that row comes back NaN and nothing is read outside x, in every copy width (16, 8, 4, 2, 4
    # bytes), with int64 and int32 row_token
    for H, dtype, id_dtype in ((2048, torch.float16, torch.int64), (300, torch.float16, torch.int32),
                               (6, torch.bfloat16, torch.int64), (3, torch.float16, torch.int32),
                               (5, torch.float32, torch.int64)):
        x = torch.randn(3, H, device=device).to(dtype)
        rows = torch.tensor([2, 3, 0, -1, 1, (1 << 40) if id_dtype == torch.int64 else (1 << 30)], device=device,
                            dtype=id_dtype)
        if device == "cpu":
            with pytest.raises(RuntimeError, match=r"moe_gather: row_token must hold rows of x, 0 <= row < 3"):
                torch.ops.kbit.moe_gather(x, rows)
            continue
        out = torch.ops.kbit.moe_gather(x, rows)
        torch.cuda.synchronize()
        bad = torch.tensor([False, True, False, True, False, True])
        assert out[bad.cuda()].isnan().all() and not out[~bad.cuda()].isnan().any()
        assert_bitwise_equal(out[~bad.cuda()], x[torch.tensor([2, 0, 1], device=device)])
    if device == "cpu":
        with pytest.raises(RuntimeError, match=r"moe_gather: row_token must hold rows of x, 0 <= row < 0"):
            torch.ops.kbit.moe_gather(torch.empty(0, 4), torch.zeros(1, dtype=torch.int64))
    else:  # x of no tokens: every row NaN
        out = torch.ops.kbit.moe_gather(torch.empty(0, 4, device=device), torch.zeros(3, dtype=torch.int64,
                                                                                       device=device))
        assert out.shape == (3, 4) and out.isnan().all()


@pytest.mark.gpu
def test_moe_gather_rows_past_the_grid(poisoned_cuda):
    # more rows than gridDim.y's 65535: the blocks stride over the rest
    gen = torch.Generator().manual_seed(seed_for("gather-many-rows"))
    x = torch.randn(5, 24, generator=gen).half().cuda()
    rows = torch.randint(0, 5, (70001,), generator=gen).cuda()
    assert_bitwise_equal(torch.ops.kbit.moe_gather(x, rows).cpu(), x.cpu()[rows.cpu()])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
def test_moe_route_gather(device, dtype, id_dtype, request):
    # moe_route's three outputs (against the stable-sort reference) and x's rows in row order, bit for bit: decode
    # sizes (CUDA's fused kernel: one row a CTA; 1024 pairs strided over the CTAs; 8191 experts; top-65), ids of no
    # expert, every copy width (rows of 2048, 96, 300, 7, 3 elements; x strided or starting at an odd element), rows
    # of 8200 elements (several vectors a thread), and sizes past the fused kernel (1032 pairs, 9000 experts:
    # moe_route's and moe_gather's kernels); a CUDA output poisoned
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"route-gather-{device}-{dtype}-{id_dtype}"))
    for T, topk, E, H, invalid in ((1, 8, 128, 2048, 0.0), (16, 8, 512, 96, 0.0), (7, 3, 5, 300, 0.3),
                                   (128, 8, 8191, 7, 0.05), (129, 8, 64, 3, 0.0), (4, 1, 1, 6, 0.5),
                                   (3, 4, 9000, 5, 0.0), (2, 4, 8, 8200, 0.0), (2, 65, 70, 16, 0.1)):
        x = torch.randn(T, H + 1, generator=gen).to(dtype).to(device)
        ids = routing(T, topk, E, id_dtype, gen, invalid).to(device)
        want_off, want_tok, want_row = route_reference(ids, E)
        for xv in (x[:, :H].contiguous(), x[:, :H], x.view(-1)[1:1 + T * H].view(T, H)):
            offsets, row_token, pair_row, xs = torch.ops.kbit.moe_route_gather(ids, E, xv)
            assert offsets.dtype == torch.int32 and row_token.dtype == torch.int64 and pair_row.dtype == torch.int32
            assert offsets.device.type == device and xs.dtype == dtype and xs.is_contiguous()
            assert offsets.cpu().tolist() == want_off, (T, topk, E)
            assert row_token.cpu().tolist() == want_tok, (T, topk, E)
            assert pair_row.cpu().tolist() == want_row, (T, topk, E)
            assert xs.shape == (T * topk, H)
            assert_bitwise_equal(xs.cpu(), xv.cpu()[torch.tensor(want_tok, dtype=torch.long)])
    # no tokens, no slots, rows of no columns
    for T, topk, H in ((0, 8, 16), (3, 0, 16), (2, 4, 0)):
        ids = torch.zeros(T, topk, dtype=id_dtype, device=device)
        offsets, row_token, pair_row, xs = torch.ops.kbit.moe_route_gather(ids, 16, torch.zeros(T, H, dtype=dtype,
                                                                                                device=device))
        assert offsets.cpu().tolist() == ([0] * 17 if T * topk == 0 else [0] + [T * topk] * 16)
        assert row_token.numel() == pair_row.numel() == T * topk and xs.shape == (T * topk, H)


@pytest.mark.gpu
def test_moe_route_gather_cuda_is_the_cpu_op(poisoned_cuda):
    # CUDA against the CPU op, bitwise, around the fused kernel's limits (1024 pairs; 8191 experts with 1024 pairs:
    # 41 KB of shared memory; 1024 pairs over 264 CTAs; top-65; rows of 1025 8-byte vectors) and a warp's 32 pairs,
    # then as a CUDA graph replayed with other ids and x
    gen = torch.Generator().manual_seed(seed_for("route-gather-kernel"))
    for T, topk, E, H in ((1, 1, 1, 40), (4, 8, 32, 40), (33, 1, 8191, 40), (128, 8, 8191, 40), (1024, 1, 7, 40),
                          (3, 11, 40, 40), (1, 64, 64, 40), (341, 3, 300, 40), (1025, 1, 7, 40), (2, 65, 70, 40),
                          (3, 8, 16, 4100)):
        ids = routing(T, topk, E, torch.int64, gen, invalid=0.1)
        x = torch.randn(T, H, generator=gen).half()
        got = torch.ops.kbit.moe_route_gather(ids.cuda(), E, x.cuda())
        want = torch.ops.kbit.moe_route_gather(ids, E, x)
        for g, w in zip(got, want):
            assert_bitwise_equal(g.cpu(), w)
    x = torch.randn(16, 2048, generator=gen).half().cuda()
    check_graph_replay(lambda i, x: torch.ops.kbit.moe_route_gather(i, 128, x),
                       [routing(16, 8, 128, torch.int64, gen).cuda(), x.clone()],
                       [routing(16, 8, 128, torch.int64, gen).cuda(), torch.randn_like(x)])


def gate_up_reference(x, W, counts):
    """silu(gate) * up in float64 of x's rows by expert against W [E, N, K] with rows interleaved in 8s."""
    E, N, _ = W.shape
    h = torch.cat([x[o:o + c].double() @ W[e].double().T
                   for e, (o, c) in enumerate(zip([0] + list(torch.tensor(counts).cumsum(0)[:-1]), counts))])
    g_u = h.view(h.shape[0], N // 16, 2, 8)
    gate, up = g_u[:, :, 0].reshape(h.shape[0], N // 2), g_u[:, :, 1].reshape(h.shape[0], N // 2)
    return gate * torch.sigmoid(gate) * up


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_grouped_gemm_silu_and_mul(device, dtype, request):
    # The op against grouped_gemm then silu_and_mul of its columns put back in order (gate, then up), bit for bit on one
    # device, and against a float64 reference (dequantized weights) within 1e-2: decode routings (on CUDA the grouped
    # GEMV's gated epilogue, chunks of 1-2 rows: the slot's sums in shared memory at 128 and 8 experts x 1 row and 2-row
    # chunks at 16 experts, one warp a unit (its lanes' direct store) on K = 256 at 1 and 2 rows), 64 experts x 8 rows
    # (the GEMV with x shared, then silu_and_mul on the interleaved columns), a prefill routing (grouped_gemm's tile /
    # small-M kernels, then the same), k = 2 .. 5, experts with no rows, and rows no expert owns (NaN); a CUDA output
    # poisoned beforehand
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"gate-up-silu-{device}-{dtype}"))
    gated_plans = []  # CUDA: the grouped GEMV launches that ran the gated epilogue
    for E, N, K, counts, k in ((128, 1024, 2048, [1] * 8 + [0] * 120, 4), (8, 1024, 2048, [1] * 8, 4),
                               (64, 256, 512, [8] * 64, 3), (4, 64, 256, [0, 300, 7, 41], 5),
                               (16, 96, 288, [2, 0, 1] * 5 + [3], 2), (32, 64, 256, [1] * 32, 4),
                               (16, 96, 256, [2] * 16, 5)):
        W = torch.randn(E, N, K, generator=gen) * K ** -0.5
        qw = kbit.quantize(W.to(device), k=k)
        T = sum(counts) + (3 if k == 2 and device == "cuda" else 0)  # 3 rows past offsets[E] on CUDA (NaN; the CPU
        # refuses such offsets)
        x = torch.randn(T, K, generator=gen).to(dtype).to(device)
        offsets = torch.tensor([0] + list(torch.tensor(counts).cumsum(0)), dtype=torch.int32, device=device)
        got = torch.ops.kbit.grouped_gemm_silu_and_mul(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, offsets,
                                                       k)
        if device == "cuda":  # which kernel ran (the op's rule: the grouped GEMV with chunks of 1-2 rows)
            plan = kbit._C._grouped_gemv_launch_plan(T, E, N, K, k, "auto")
            if kbit._C.grouped_gemm_dispatch(T, E, N, K, k)[0] == "gemv" and plan["chunk_rows"] <= 2:
                gated_plans.append(plan)
        assert got.shape == (T, N // 2) and got.dtype == dtype
        if T > sum(counts):  # the unowned rows: NaN (grouped_gemm's rule)
            assert got[sum(counts):].isnan().all()
            got, x, T = got[:sum(counts)], x[:sum(counts)], sum(counts)
        h = torch.ops.kbit.grouped_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, offsets, k)
        want = torch.ops.kbit.silu_and_mul(h.view(T, N // 16, 2, 8).transpose(1, 2).reshape(T, N))
        assert_bitwise_equal(got.cpu(), want.cpu())
        W_hat = kbit.dequantize(qw, torch.float32).cpu()
        ref = gate_up_reference(x.cpu(), W_hat, counts)
        err = ((got.cpu().double() - ref).norm() / ref.norm()).item()
        assert err <= 1e-2, (E, N, K, k, err)
    # the epilogue's forms all ran: 1- and 2-slot kernels, one warp a unit and several, by rows (on a GPU with a
    # measured table: without one grouped_gemm takes the tensor-core kernels, and the op the two ops)
    if device == "cuda" and kbit._C.grouped_gemm_dispatch(1, 1, 16, 256, 4)[2] != "heuristic":
        assert {p["token_slots"] for p in gated_plans} == {1, 2}, gated_plans
        assert {p["warps_per_unit"] == 1 for p in gated_plans} == {True, False}, gated_plans
        assert "per_cta_rows" in {p["schedule"] for p in gated_plans}, gated_plans


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_silu_and_mul(device, dtype):
    gen = torch.Generator().manual_seed(seed_for(f"silu-{device}-{dtype}"))
    # (the last case a non-contiguous view: every other column of a wider tensor)
    for rows, I, step in ((1, 512, 1), (37, 96, 1), (0, 64, 1), (5, 1, 1), (6, 40, 2)):
        h = (torch.randn(rows, 2 * I * step, generator=gen) * 4).to(dtype).to(device)[:, ::step]
        out = torch.ops.kbit.silu_and_mul(h)
        g, u = h[:, :I].double(), h[:, I:].double()
        ref = (g * torch.sigmoid(g) * u).to(dtype)  # rounded once, as the op
        assert out.shape == (rows, I) and out.dtype == dtype and out.device.type == device
        tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-6}[dtype]
        torch.testing.assert_close(out.double().cpu(), ref.double().cpu(), rtol=tol, atol=tol)
    ht = (torch.randn(64, 6, generator=gen) * 4).to(dtype).to(device).t()  # [6, 64], strides (1, 6)
    out = torch.ops.kbit.silu_and_mul(ht)
    assert out.is_contiguous()  # (as the fake kernel says)
    torch.testing.assert_close(out, torch.ops.kbit.silu_and_mul(ht.contiguous()), rtol=0, atol=0)
    # interleaved (gate and up in alternating groups of 8 columns): the op on the columns put in order, bit for bit
    for rows, I in ((3, 8), (17, 256), (0, 16)):
        h = (torch.randn(rows, 2 * I, generator=gen) * 4).to(dtype).to(device)
        in_order = h.view(rows, I // 8, 2, 8).transpose(1, 2).reshape(rows, 2 * I)
        got = torch.ops.kbit.silu_and_mul(h, interleaved=True)
        assert got.shape == (rows, I) and got.is_contiguous()
        torch.testing.assert_close(got, torch.ops.kbit.silu_and_mul(in_order), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="interleaved h's last dim must be a multiple of 16"):
        torch.ops.kbit.silu_and_mul(h[:, :24], interleaved=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("w_dtype", [torch.float32, torch.float16, torch.float64], ids=str)
def test_moe_combine(device, dtype, w_dtype):
    gen = torch.Generator().manual_seed(seed_for(f"combine-{device}-{dtype}-{w_dtype}"))
    # (top-11 and top-17: the CUDA kernel's slots go 8 at a time, the last chunk partial)
    for T, topk, E, H, invalid in ((1, 8, 128, 2048, 0.0), (9, 4, 16, 96, 0.3), (3, 2, 4, 300, 0.0), (2, 3, 5, 7, 1.0),
                                   (5, 11, 16, 64, 0.2), (2, 17, 32, 300, 0.1)):
        ids = routing(T, topk, E, torch.int64, gen, invalid).to(device)
        w = torch.rand(T, topk, generator=gen).to(w_dtype).to(device)
        _, _, pair_row = torch.ops.kbit.moe_route(ids, E)
        y = torch.randn(T * topk, H, generator=gen).to(dtype).to(device)
        valid = ((ids >= 0) & (ids < E)).cpu()
        y[pair_row[~valid.reshape(-1).to(device)].long()] = float("nan")  # rows of no expert: never read
        out = torch.ops.kbit.moe_combine(y, w, ids, pair_row, E)
        rows = y.double().cpu()[pair_row.long().cpu()].view(T, topk, H)
        ref = torch.where(valid[:, :, None], rows * w.double().cpu()[:, :, None], 0.0).sum(1)
        assert out.shape == (T, H) and out.dtype == dtype and not out.isnan().any()
        tol = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5}[dtype]
        torch.testing.assert_close(out.double().cpu(), ref.to(dtype).double(), rtol=tol, atol=tol)
        assert_bitwise_equal(torch.ops.kbit.moe_combine(y, w, ids, pair_row, E), out)


@pytest.mark.gpu
def test_moe_combine_and_silu_cuda_match_cpu(poisoned_cuda):
    # the CUDA kernels against the CPU ops: combine in the same order with unfused products (the same
    # bits), silu within an ulp (exp differs between the libraries)
    gen = torch.Generator().manual_seed(seed_for("combine-cuda-cpu"))
    for topk in (8, 1, 10, 17, 300):  # one chunk of 8 slots, a partial one, two, three; two rounds of 256 slots
        ids = routing(13, topk, 64, torch.int32, gen, invalid=0.1)
        w = torch.rand(13, topk, generator=gen).half()
        _, _, pair_row = torch.ops.kbit.moe_route(ids, 64)
        y = torch.randn(13 * topk, 520, generator=gen).bfloat16()
        args = (y, w, ids, pair_row, 64)
        assert_bitwise_equal(torch.ops.kbit.moe_combine(*(a.cuda() if torch.is_tensor(a) else a for a in args)).cpu(),
                             torch.ops.kbit.moe_combine(*args))
    h = torch.randn(29, 1024, generator=gen).half()
    torch.testing.assert_close(torch.ops.kbit.silu_and_mul(h.cuda()).cpu(), torch.ops.kbit.silu_and_mul(h),
                               rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_moe_ops_bad_input(device):
    ids = torch.zeros(3, 2, dtype=torch.int64, device=device)
    y = torch.zeros(6, 8, dtype=torch.float16, device=device)
    w = torch.ones(3, 2, device=device)
    pr = torch.zeros(6, dtype=torch.int32, device=device)
    with pytest.raises(RuntimeError, match="moe_route: top_k_index must be 2-D"):
        torch.ops.kbit.moe_route(ids.view(-1), 4)
    with pytest.raises(RuntimeError, match="moe_route: top_k_index must be int64 or int32"):
        torch.ops.kbit.moe_route(ids.float(), 4)
    with pytest.raises(RuntimeError, match="moe_route: num_experts must be 1 to"):
        torch.ops.kbit.moe_route(ids, 0)
    with pytest.raises(RuntimeError, match="silu_and_mul: h's last dim must be even"):
        torch.ops.kbit.silu_and_mul(y[:, :7])
    with pytest.raises(RuntimeError, match="silu_and_mul: h must be float16, bfloat16 or float32"):
        torch.ops.kbit.silu_and_mul(ids)
    with pytest.raises(RuntimeError, match="moe_combine: y must have one row per"):
        torch.ops.kbit.moe_combine(y[:5], w, ids, pr, 4)
    with pytest.raises(RuntimeError, match="moe_combine: top_k_weights must be"):
        torch.ops.kbit.moe_combine(y, w[:, :1], ids, pr, 4)
    with pytest.raises(RuntimeError, match="moe_combine: pair_row must be moe_route's int32"):
        torch.ops.kbit.moe_combine(y, w, ids, pr.long(), 4)
    with pytest.raises(RuntimeError, match="moe_combine: num_experts must be 1 to"):
        torch.ops.kbit.moe_combine(y, w, ids, pr, 0)
    with pytest.raises(RuntimeError, match="moe_combine: y must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_combine(y.view(6, 2, 4), w, ids, pr, 4)
    with pytest.raises(RuntimeError, match="moe_combine: y must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_combine(y.to(torch.int32), w, ids, pr, 4)
    with pytest.raises(RuntimeError, match="moe_combine: top_k_index must be int64 or int32"):
        torch.ops.kbit.moe_combine(y, w, ids.float(), pr, 4)
    with pytest.raises(RuntimeError, match="silu_and_mul: h must be 2-D"):
        torch.ops.kbit.silu_and_mul(y.view(-1))
    rt = torch.zeros(4, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match="moe_gather: x must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_gather(y.view(-1), rt)
    with pytest.raises(RuntimeError, match="moe_gather: x must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_gather(ids, rt)
    with pytest.raises(RuntimeError, match="moe_gather: row_token must be 1-D int64 or int32"):
        torch.ops.kbit.moe_gather(y, rt.view(2, 2))
    with pytest.raises(RuntimeError, match="moe_gather: row_token must be 1-D int64 or int32"):
        torch.ops.kbit.moe_gather(y, rt.float())
    qw = kbit.quantize(torch.randn(2, 40, 64, device=device), k=4)
    with pytest.raises(RuntimeError, match="grouped_gemm_silu_and_mul: the weight's N must be a multiple of 16"):
        torch.ops.kbit.grouped_gemm_silu_and_mul(torch.zeros(3, 64, dtype=torch.float16, device=device), qw.packed,
                                                 qw.absmax, qw.row_scale, qw.codebook,
                                                 torch.tensor([0, 1, 3], dtype=torch.int32, device=device), 4)
    x3 = torch.zeros(3, 8, dtype=torch.float16, device=device)
    with pytest.raises(RuntimeError, match="moe_route_gather: x must have one row per token of top_k_index"):
        torch.ops.kbit.moe_route_gather(ids, 4, y)
    with pytest.raises(RuntimeError, match="moe_route_gather: x must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_route_gather(ids, 4, x3.view(3, 2, 4))
    with pytest.raises(RuntimeError, match="moe_route_gather: x must be 2-D .* float16, bfloat16 or float32"):
        torch.ops.kbit.moe_route_gather(ids, 4, x3.to(torch.int32))
    with pytest.raises(RuntimeError, match="moe_route_gather: top_k_index must be int64 or int32"):
        torch.ops.kbit.moe_route_gather(ids.float(), 4, x3)
    with pytest.raises(RuntimeError, match="moe_route_gather: top_k_index must be 2-D"):
        torch.ops.kbit.moe_route_gather(ids.view(-1), 4, x3)
    with pytest.raises(RuntimeError, match="moe_route_gather: num_experts must be 1 to"):
        torch.ops.kbit.moe_route_gather(ids, 0, x3)
    bad_row = torch.tensor([0, 1, 2, 3, 4, 6], dtype=torch.int32, device=device)  # 6: past the 6 rows
    if device == "cpu":
        with pytest.raises(RuntimeError, match="moe_combine: pair_row must hold rows 0 .. 5"):
            torch.ops.kbit.moe_combine(y, w, ids, bad_row, 4)
    else:  # no host sync to check it: the token of the bad row comes back NaN, nothing is read past y
        out = torch.ops.kbit.moe_combine(y, w, ids, bad_row, 4)
        torch.cuda.synchronize()
        assert out[2].isnan().all() and not out[:2].isnan().any()
        negative = torch.tensor([0, 1, 2, 3, -1, 5], dtype=torch.int32, device=device)  # -1: before the rows
        out = torch.ops.kbit.moe_combine(y, w, ids, negative, 4)
        torch.cuda.synchronize()
        assert out[2].isnan().all() and not out[:2].isnan().any()
        ids10 = torch.zeros(2, 10, dtype=torch.int64, device=device)  # a bad row in the second chunk of 8 slots
        pr10 = torch.arange(20, dtype=torch.int32, device=device)
        pr10[19] = 20
        out = torch.ops.kbit.moe_combine(torch.randn(20, 8, device=device), torch.ones(2, 10, device=device), ids10,
                                         pr10, 4)
        torch.cuda.synchronize()
        assert out[1].isnan().all() and not out[0].isnan().any()
        ids300 = torch.zeros(2, 300, dtype=torch.int64, device=device)  # ... and in the second round of 256 slots
        pr300 = torch.arange(600, dtype=torch.int32, device=device)
        pr300[300 + 280] = -5
        out = torch.ops.kbit.moe_combine(torch.randn(600, 8, device=device), torch.ones(2, 300, device=device),
                                         ids300, pr300, 4)
        torch.cuda.synchronize()
        assert out[1].isnan().all() and not out[0].isnan().any()
        with pytest.raises(RuntimeError, match="pair_row"):
            torch.ops.kbit.moe_combine(y, w, ids, pr.cpu(), 4)
        with pytest.raises(RuntimeError, match="row_token"):
            torch.ops.kbit.moe_gather(y, pr.long().cpu())
        with pytest.raises(RuntimeError, match="one device: top_k_index is on cuda.* x is on cpu"):
            torch.ops.kbit.moe_route_gather(ids, 4, x3.cpu())
