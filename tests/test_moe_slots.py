"""kbit::grouped_gemm_slots (kbit.Experts' decode calls: every (token, slot) pair its own row and expert, no routing)
and kbit::moe_combine without pair_row, against float64 references, on the CPU (the op composed of moe_route_gather
and grouped_gemm) and (gpu marker) on CUDA (one grouped GEMV kernel up to 32 slots, the composed op past that)."""
import pytest
import torch

import kbit
from conftest import seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay, cuda_kernel_names

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
REL_TOL = {torch.float16: 1e-3, torch.bfloat16: 4e-3}  # the GEMM bound (relative Frobenius error)


def slot_ids(T, r, E, gen, invalid=0.0, distinct=True):
    """[T, r] expert ids: a token's r distinct (a router's top-r) or drawn with repeats; with `invalid`, that share
    of ids outside [0, E) (negative, E and past it)."""
    if distinct and r <= E:
        ids = torch.stack([torch.randperm(E, generator=gen)[:r] for _ in range(T)])
    else:
        ids = torch.randint(0, E, (T, r), generator=gen)
    if invalid:
        bad = torch.rand(T, r, generator=gen) < invalid
        ids = torch.where(bad, torch.tensor([-1, E, E + 5])[torch.randint(0, 3, (T, r), generator=gen)], ids)
    return ids


def slots_reference(x, W_hat, ids, gated):
    """float64: row t r + j = x[t] @ W_hat[ids[t, j]]^T (silu(gate) * up of rows interleaved in 8s where gated); NaN
    for an id outside [0, E)."""
    E, N, _ = W_hat.shape
    T, r = ids.shape
    out = torch.full((T * r, N // 2 if gated else N), float("nan"), dtype=torch.float64)
    for t in range(T):
        for j in range(r):
            e = int(ids[t, j])
            if 0 <= e < E:
                h = W_hat[e].double() @ x[t].double()
                if gated:
                    g_u = h.view(N // 16, 2, 8)
                    gate, up = g_u[:, 0].reshape(-1), g_u[:, 1].reshape(-1)
                    h = gate * torch.sigmoid(gate) * up
                out[t * r + j] = h
    return out


# (T, r, E, N, K, k, gated, invalid, distinct): decode (one token's top-8 of 128 experts, Qwen3-MoE's gate/up and
# down shapes; top-10 of 512 at 3 tokens: 30 slots; 32 slots, the kernel's most), the down call's form (r = 1),
# repeated experts, ids outside [0, E), K not a multiple of 256 and odd N, k = 2 .. 5; 33 and 48 slots (CUDA: the
# composed op)
CASES = [(1, 8, 128, 1024, 2048, 4, True, 0.0, True), (8, 1, 128, 2048, 512, 4, False, 0.0, True),
         (3, 10, 512, 128, 256, 3, True, 0.0, True), (4, 8, 64, 40, 96, 5, False, 0.2, True),
         (32, 1, 16, 96, 288, 2, False, 0.1, False), (2, 4, 3, 64, 256, 4, True, 0.3, False),
         (11, 3, 40, 33, 128, 4, False, 0.1, True), (6, 8, 64, 48, 256, 3, True, 0.0, True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("id_dtype", [torch.int64, torch.int32], ids=str)
def test_grouped_gemm_slots(device, dtype, id_dtype, request):
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"gemm-slots-{device}-{dtype}-{id_dtype}"))
    kernel_cases = 0
    for T, r, E, N, K, k, gated, invalid, distinct in CASES:
        if device == "cpu" and E * N * K > 2 ** 26:  # (the CPU op dequantizes every expert with rows: keep it small)
            E = 16
        W = torch.randn(E, N, K, generator=gen) * K ** -0.5
        qw = kbit.quantize(W.to(device), k=k)
        x = torch.randn(T, K, generator=gen).to(dtype).to(device)
        ids = slot_ids(T, r, E, gen, invalid, distinct).to(id_dtype).to(device)
        if device == "cuda":  # (poisoned memory is NaN already: a finite block of the output's size, freed, which the
            # caching allocator hands to the op, so that the invalid rows' NaN is the kernel's)
            torch.full((T * r, N // 2 if gated else N), 7.0, dtype=dtype, device=device)
        got = torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, k, gated)
        assert got.shape == (T * r, N // 2 if gated else N) and got.dtype == dtype and got.device.type == device
        ref = slots_reference(x.cpu(), kbit.dequantize(qw, torch.float32).cpu(), ids.cpu(), gated)
        bad = ref[:, 0].isnan()
        assert torch.equal(got.cpu().isnan().all(1), bad) and not got.cpu()[~bad].isnan().any(), (T, r, E, N, K)
        if (~bad).any():
            g, want = got.cpu()[~bad].double(), ref[~bad]
            err = ((g - want).norm() / want.norm()).item()
            assert err <= (1e-2 if gated else REL_TOL[dtype]), (T, r, E, N, K, k, err)
        again = torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, k, gated)
        assert_bitwise_equal(again.cpu(), got.cpu())  # (run to run: the same bits)
        if device == "cuda" and T * r <= 32:  # the kernel's cases: its plan (the 1-slot per-warp static schedule)
            plan = kbit._C._grouped_gemv_launch_plan(T * r, T * r, N, K, k, "auto")
            assert plan["token_slots"] == 1 and plan["schedule"] == "per_warp_static", plan
            kernel_cases += 1
    assert device == "cpu" or kernel_cases == 6


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_gemm_slots_is_the_routed_calls(device):
    # the same rows as the routed form (moe_route_gather, then grouped_gemm / grouped_gemm_silu_and_mul, rows put back
    # by pair_row): bitwise on the CPU (it is that form), within the GEMM bound on CUDA (the grouped GEMV's warps per
    # unit may differ between the two launches, and with them the order of a row's sums)
    gen = torch.Generator().manual_seed(seed_for(f"gemm-slots-routed-{device}"))
    E, N, K, k = 64, 256, 1024, 4
    qw = kbit.quantize((torch.randn(E, N, K, generator=gen) * K ** -0.5).to(device), k=k)
    for T, r, gated in ((1, 8, True), (1, 8, False), (4, 4, True), (40, 2, False)):
        x = torch.randn(T, K, generator=gen).half().to(device)
        ids = slot_ids(T, r, E, gen).to(device)
        got = torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, k, gated)
        offsets, _, pair_row, xs = torch.ops.kbit.moe_route_gather(ids, E, x)
        op = torch.ops.kbit.grouped_gemm_silu_and_mul if gated else torch.ops.kbit.grouped_gemm
        want = op(xs, qw.packed, qw.absmax, qw.row_scale, qw.codebook, offsets, k)[pair_row.long()]
        if device == "cpu":
            assert_bitwise_equal(got, want)
        else:
            err = ((got.double() - want.double()).norm() / want.double().norm()).item()
            assert err <= 2e-3, (T, r, gated, err)


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_gemm_slots_empty_and_bad_input(device):
    qw = kbit.quantize(torch.randn(4, 32, 64, device=device), k=4)
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
    x = torch.zeros(3, 64, dtype=torch.float16, device=device)
    ids = torch.zeros(3, 2, dtype=torch.int64, device=device)
    for T, r in ((0, 8), (3, 0)):  # no tokens, no slots: no rows
        out = torch.ops.kbit.grouped_gemm_slots(x[:T], *args, ids.new_zeros(T, r), 4, True)
        assert out.shape == (0, 16) and out.dtype == torch.float16
    with pytest.raises(RuntimeError, match="grouped_gemm_slots: top_k_index must be 2-D \\[T, r\\] with x's T = 3"):
        torch.ops.kbit.grouped_gemm_slots(x, *args, ids.view(-1), 4)
    with pytest.raises(RuntimeError, match="grouped_gemm_slots: top_k_index must be 2-D \\[T, r\\] with x's T = 3"):
        torch.ops.kbit.grouped_gemm_slots(x, *args, ids[:2], 4)
    with pytest.raises(RuntimeError, match="grouped_gemm_slots: top_k_index must be int64 or int32"):
        torch.ops.kbit.grouped_gemm_slots(x, *args, ids.float(), 4)
    with pytest.raises(RuntimeError, match="grouped_gemm_slots: the weight's N must be a multiple of 16"):
        q40 = kbit.quantize(torch.randn(4, 40, 64, device=device), k=4)
        torch.ops.kbit.grouped_gemm_slots(x, q40.packed, q40.absmax, q40.row_scale, q40.codebook, ids, 4, True)
    q2 = kbit.quantize(torch.randn(32, 64, device=device), k=4)  # a 2-D weight
    with pytest.raises(RuntimeError, match="row_scale must be \\[E, N\\]"):
        torch.ops.kbit.grouped_gemm_slots(x, q2.packed, q2.absmax, q2.row_scale, q2.codebook, ids, 4)
    with pytest.raises(RuntimeError, match="grouped_gemm_slots needs a 3-D \\[E, N, K\\] \\(expert stack\\) weight"):
        torch.ops.kbit.grouped_gemm_slots(x, q2.packed, q2.absmax, q2.row_scale[None], q2.codebook, ids, 4)
    if device == "cuda":
        with pytest.raises(RuntimeError, match="same device|device"):
            torch.ops.kbit.grouped_gemm_slots(x, *args, ids.cpu(), 4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gated", [False, True])
def test_grouped_gemm_slots_all_ids_invalid(device, gated, request):
    # no slot names an expert (ids < 0 or >= E): every row NaN, nothing else read or written
    if device == "cuda":
        request.getfixturevalue("poisoned_cuda")
    gen = torch.Generator().manual_seed(seed_for(f"gemm-slots-all-invalid-{device}-{gated}"))
    E, N, K = 16, 64, 256
    qw = kbit.quantize((torch.randn(E, N, K, generator=gen) * K ** -0.5).to(device), k=4)
    for T, r in ((1, 8), (3, 2), (5, 8)):  # 8 and 6 slots (CUDA: the kernel), 40 (the composed op)
        x = torch.randn(T, K, generator=gen).half().to(device)
        ids = torch.tensor([-1, E, E + 7, -(2 ** 31)])[torch.randint(0, 4, (T, r), generator=gen)].to(device)
        if device == "cuda":  # (a finite block for the allocator to hand out: the NaN must be the op's)
            torch.full((T * r, N // 2 if gated else N), 7.0, dtype=torch.float16, device=device)
        got = torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, 4, gated)
        assert got.shape == (T * r, N // 2 if gated else N) and got.isnan().all(), (T, r)


@pytest.mark.gpu
def test_grouped_gemm_slots_runs_the_slot_kernel(poisoned_cuda):
    # up to 32 slots the op is one launch of the grouped GEMV's by-slot instantiation (scalar_gemv_kernel's
    # template argument kBySlot, the last but one, true) and no routing kernel; past 32 the composed op (the routed
    # kernel, kBySlot false)
    gen = torch.Generator().manual_seed(seed_for("gemm-slots-kernel"))
    E, N, K = 128, 256, 1024
    qw = kbit.quantize((torch.randn(E, N, K, generator=gen) * K ** -0.5).cuda(), k=4)

    def gemv_by_slot_flags(T, r):
        x = torch.randn(T, K, generator=gen).half().cuda()
        ids = slot_ids(T, r, E, gen).cuda()
        names = cuda_kernel_names(lambda: torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale,
                                                                            qw.codebook, ids, 4, True))
        gemv = [n for n in names if "scalar_gemv_kernel<" in n]
        return names, [n[n.index("<") + 1:n.rindex(">")].split(",")[-2].strip() for n in gemv]

    names, flags = gemv_by_slot_flags(1, 8)
    assert flags == ["true"] and len(names) == 1, names
    names, flags = gemv_by_slot_flags(5, 8)
    assert "true" not in flags and any("moe_route_gather" in n for n in names), names


@pytest.mark.parametrize("device", DEVICES)
def test_moe_combine_without_pair_row(device):
    # pair_row None: y's rows are the pairs in order, the same bits as pair_row = arange
    gen = torch.Generator().manual_seed(seed_for(f"combine-no-pair-row-{device}"))
    for T, topk, E, H in ((1, 8, 128, 2048), (3, 10, 512, 96), (4, 17, 32, 300)):
        ids = slot_ids(T, topk, E, gen, invalid=0.2).to(device)
        w = torch.rand(T, topk, generator=gen).to(device)
        y = torch.randn(T * topk, H, generator=gen).half().to(device)
        y[(~((ids >= 0) & (ids < E))).reshape(-1)] = float("nan")  # rows of no expert: never read
        out = torch.ops.kbit.moe_combine(y, w, ids, None, E)
        want = torch.ops.kbit.moe_combine(y, w, ids, torch.arange(T * topk, dtype=torch.int32, device=device), E)
        assert not out.isnan().any()
        assert_bitwise_equal(out, want)


@pytest.mark.gpu
def test_grouped_gemm_slots_graph_replay(poisoned_cuda):
    # captured once, replayed with other x and ids (the kernel reads the ids on the device): the eager call's bits
    gen = torch.Generator().manual_seed(seed_for("gemm-slots-graph"))
    E, N, K, k = 128, 512, 2048, 4
    qw = kbit.quantize((torch.randn(E, N, K, generator=gen) * K ** -0.5).cuda(), k=k)

    def gate_up(x, ids):
        return torch.ops.kbit.grouped_gemm_slots(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, ids, k, True)

    x1, x2 = (torch.randn(1, K, generator=gen).half().cuda() for _ in range(2))
    ids1, ids2 = (slot_ids(1, 8, E, gen).cuda() for _ in range(2))
    ids2[0, 3] = E  # a slot of no expert after the capture: its row NaN
    check_graph_replay(gate_up, [x1.clone(), ids1.clone()], [x2, ids2])
