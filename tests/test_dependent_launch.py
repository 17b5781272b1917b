"""Programmatic dependent launch (csrc/cuda/common/dependent_launch.cuh): kernels launched with it
start while the kernel before them is finishing, and must not read anything that kernel writes
before their grid_dependency_wait(). These tests put a writer kernel right before each call (no
synchronization in between) and check that every call saw the writer's values: x, the weight's
codes / absmax / row scales, and the output of an earlier kbit call feeding the next one."""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest
import torch

import kbit
import reference as R
from conftest import GEMM_RTOL, KS, make_weight, seed_for
from cuda_utils import assert_bitwise_equal, check_graph_replay

pytestmark = pytest.mark.gpu
DEV = torch.device("cuda")


@functools.lru_cache(maxsize=None)
def quantized_pair(k, N, K, tag, scale=1.0):
    """Two CUDA QuantizedWeights of one shape and codebook (N(0, scale^2) weights), and their
    float64 dequantizations."""
    g = torch.Generator().manual_seed(seed_for(f"pdl-{k}-{N}-{K}-{tag}"))
    out = []
    for _ in range(2):
        qw = kbit.quantize((make_weight("normal", (N, K), torch.float32, gen=g) * scale).half().to(DEV), k=k)
        flat = qw.to_layout("flat").to("cpu")
        out.append((qw, R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)))
    return out


def rel_err(y, ref):
    return float((y.double() - ref).norm() / ref.norm())


def op_call(op, decode):
    fn = getattr(torch.ops.kbit, op)
    return (lambda x, *w: fn(x, *w, decode)) if decode else fn


@pytest.mark.parametrize("op,M,decode", [("gemv_gemm", 1, "mma"), ("gemv_gemm", 4, "mma"), ("gemv_gemm", 8, "mma"),
                                         ("gemv_gemm", 16, "mma"), ("gemv_gemm", 1, "shuffle"),
                                         ("gemv_gemm", 4, "shuffle"), ("mma_gemm", 8, None), ("mma_gemm", 33, None),
                                         ("tile_gemm", 33, None), ("wgmma_gemm", 16, None), ("wgmma_gemm", 33, None),
                                         ("wgmma_gemm", 128, None), ("dequant_cublas_gemm", 33, None),
                                         ("dequant_cublas_gemm", 300, None)])
@pytest.mark.parametrize("k", KS)
def test_kernels_see_weights_and_x_written_just_before(k, op, M, decode):
    # Each round overwrites x, then the weight's tensors and its codebook (negated for weight b), with
    # kernels (torch.where) and calls the op at once: a call that read any of them before its wait
    # would match the other weight. The wgmma kernel (x by tensor copies, weights by bulk copies, all
    # after its wait; only L2 prefetches before) with its first stage requested alone and with every
    # stage at once. The dequantize + cuBLAS path: its dequantize and epilogue kernels are launched with PDL
    # (nothing read before their waits; the epilogue's row scales asked of L2). (ATen's writers never let the next
    # kernel start early; a kbit kernel that does: test_chained_calls_feed_each_other, test_chained_wgmma_calls,
    # test_chained_dequant_cublas_calls.)
    if op == "wgmma_gemm" and not kbit._C.wgmma_gemm_runs(k, M):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    call = op_call(op, decode)
    (qa, wa), (qb, wb) = quantized_pair(k, 4096, 2048, "weights")
    assert torch.equal(qa.codebook, qb.codebook)  # b's reference below: its codes on -codebook give -wb
    live = [t.clone() for t in (qa.packed, qa.absmax, qa.row_scale, qa.codebook)]
    g = torch.Generator(device=DEV).manual_seed(seed_for(f"pdl-x-{k}-{M}"))
    xs = torch.randn(2, M, 2048, device=DEV, generator=g).half()
    x = torch.empty(M, 2048, device=DEV, dtype=torch.float16)
    picks = [bool(i % 3 == 1) for i in range(12)]  # a, b, a, a, b, a, ...
    # wgmma: the first stage alone (2) and every stage at once (1)
    for alone in ((2, 1) if op == "wgmma_gemm" else (0,)):
        previous = kbit._C._set_wgmma_first_stage_alone(alone)
        try:
            ys = []
            for use_b in picks:
                flag = torch.tensor(use_b, device=DEV)
                torch.where(flag, xs[1], xs[0], out=x)
                for dst, ta, tb in zip(live, (qa.packed, qa.absmax, qa.row_scale, qa.codebook),
                                       (qb.packed, qb.absmax, qb.row_scale, -qa.codebook)):
                    torch.where(flag, tb, ta, out=dst)
                ys.append(call(x, *live, k))
            torch.cuda.synchronize()
        finally:
            kbit._C._set_wgmma_first_stage_alone(previous)
        for i, (use_b, y) in enumerate(zip(picks, ys)):
            ref = xs[int(use_b)].double() @ (-wb if use_b else wa).T  # qb's codes on the negated codebook
            err = rel_err(y, ref)
            assert err <= GEMM_RTOL[torch.float16], (alone, i, use_b, err)


def check_chain(step, x, w1, w2, g):
    """y1 = step(x, 0), y2 = step(y1, 1), y3 = step(y2, 0), ... (six calls, nothing in between): each
    against x @ W1^T @ W2^T ... in float64 (within 4x the GEMM bound of x's dtype), eagerly and replayed from a
    CUDA graph (with new x too)."""
    def chain(x):
        outs = []
        for i in range(6):
            x = step(x, i % 2)
            outs.append(x)
        return tuple(outs)

    outs = chain(x)
    ref = x.double()
    for i, y in enumerate(outs):
        ref = ref @ (w1 if i % 2 == 0 else w2).T
        assert rel_err(y, ref) <= 4 * GEMM_RTOL[x.dtype], i
    x2 = torch.randn(x.shape, device=DEV, generator=g).to(x.dtype)
    check_graph_replay(chain, (x,), (x2,))


@pytest.mark.parametrize("M", [2, 40])
@pytest.mark.parametrize("k", [3, 4])
def test_chained_calls_feed_each_other(k, M):
    # y1 = x @ W1^T, y2 = y1 @ W2^T, y3 = y2 @ W1^T ...: each call's x is the previous call's
    # output with nothing in between - a kbit PDL kernel right after the one writing its x (the
    # case where it starts early; after an aten kernel it starts only once that one's CTAs have
    # exited) - eagerly and replayed from a CUDA graph. Weights N(0, 1/K) keep the values in range.
    (q1, w1), _ = quantized_pair(k, 2048, 2048, "chain1", 2048 ** -0.5)
    (q2, w2), _ = quantized_pair(k, 2048, 2048, "chain2", 2048 ** -0.5)
    g = torch.Generator(device=DEV).manual_seed(seed_for(f"pdl-chain-{k}-{M}"))
    x = torch.randn(M, 2048, device=DEV, generator=g).half()
    check_chain(lambda x, i: kbit.gemm(x, q1 if i == 0 else q2), x, w1, w2, g)


@pytest.mark.parametrize("M", [16, 128])
def test_chained_wgmma_calls(M):
    # The wgmma kernel, each call's x the previous call's output: a wgmma kernel lets the next one start at
    # its top, so a call whose tensor copies of x came before its wait would read a stale x (M = 16: four
    # warpgroups, 16-token boxes; 128: two, 128-token boxes; 2048 x 2048 splits K in clusters). Eagerly and
    # from a CUDA graph.
    if not kbit._C.wgmma_gemm_runs(4, M):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    check_op_chain(torch.ops.kbit.wgmma_gemm, M, f"pdl-wgmma-chain-{M}")


def check_op_chain(op, M, seed_tag, dtype=torch.float16, first=("chain1", 2048 ** -0.5), first_check=None):
    """check_chain over one op (x, packed, absmax, row_scale, codebook, k) alternating two 2048 x 2048 weights,
    k = 4: the first N(0, scale^2) for first = (tag, scale), by default N(0, 1/K) (values stay in range), the
    second N(0, 1/K); from an x [M, 2048] of dtype seeded by seed_tag. first_check(q1) asserts what the test needs
    of the first weight."""
    k = 4
    (q1, w1), _ = quantized_pair(k, 2048, 2048, *first)
    (q2, w2), _ = quantized_pair(k, 2048, 2048, "chain2", 2048 ** -0.5)
    if first_check:
        first_check(q1)
    g = torch.Generator(device=DEV).manual_seed(seed_for(seed_tag))
    x = torch.randn(M, 2048, device=DEV, generator=g).to(dtype)

    def step(x, i):
        q = q1 if i == 0 else q2
        return op(x, q.packed, q.absmax, q.row_scale, q.codebook, k)

    check_chain(step, x, w1, w2, g)


@pytest.mark.parametrize("M", [40, 300])
def test_chained_dequant_cublas_calls(M):
    # The dequantize + cuBLAS path, each call's x the previous call's output: its epilogue (PDL; no capped row
    # in these weights, so it only checks their row scales after its wait) lets the next call's dequantize (PDL)
    # start at its top, whose workspace may be the memory the previous call's cuBLAS read. Eagerly and from a CUDA
    # graph. (Capped rows: test_chained_dequant_cublas_capped_rows.)
    check_op_chain(torch.ops.kbit.dequant_cublas_gemm, M, f"pdl-dq-chain-{M}")


@pytest.mark.parametrize("M", [40, 300])
def test_chained_dequant_cublas_capped_rows(M):
    # The same chain with the epilogue at work: bf16 x (the fallback caps bf16 row scales at 1) and a weight of
    # values in the hundreds (row scales of 4 and 8: capped rows, whose outputs the epilogue multiplies back after its
    # wait, between cuBLAS writing y and the next call's cuBLAS reading it), alternating with an N(0, 1/K) one.
    def capped(q):  # (else the epilogue would have nothing to do)
        assert bool((q.row_scale > 1).any()), q.row_scale.max()

    check_op_chain(torch.ops.kbit.dequant_cublas_gemm, M, f"pdl-dq-capped-{M}", torch.bfloat16,
                   ("chain-capped", 200.0), capped)


def moe_glue_chain(ids, x, w, E, step=lambda: None):
    """kbit.Experts' glue kernels, each reading the one before's output: moe_route -> moe_gather (row_token) ->
    silu_and_mul (the gathered rows) -> moe_route_gather (x: those activations' first rows) -> moe_combine (the
    activations, by moe_route_gather's pair_row); step() after each."""
    offsets, row_token, pair_row = torch.ops.kbit.moe_route(ids, E)
    step()
    xs = torch.ops.kbit.moe_gather(x, row_token)
    step()
    a = torch.ops.kbit.silu_and_mul(xs)
    step()
    fused = torch.ops.kbit.moe_route_gather(ids, E, a[:ids.shape[0]])
    step()
    return offsets, xs, a, *fused, torch.ops.kbit.moe_combine(a, w, ids, fused[2], E)


@pytest.mark.parametrize("T,E", [(1, 128), (6, 64), (700, 16)])  # 700 x 8 pairs: moe_route's ATen path
def test_moe_glue_chain_sees_each_output(T, E, poisoned_cuda):
    # The glue kernels all trigger their dependents at their top, so each next one starts early and must
    # wait before reading: twelve routings back to back, no synchronization, against the same ops one at a
    # time with a synchronization after each (the same kernels: the same bits), then as one CUDA graph.
    g = torch.Generator().manual_seed(seed_for(f"pdl-glue-{T}-{E}"))
    topk = 8
    x = torch.randn(T, 2 * 96, generator=g).half().to(DEV)
    cases = [(torch.randint(-1, E + 1, (T, topk), generator=g).to(DEV), torch.rand(T, topk, generator=g).to(DEV))
             for _ in range(12)]
    chained = [moe_glue_chain(ids, x, w, E) for ids, w in cases]
    stepwise = [moe_glue_chain(ids, x, w, E, torch.cuda.synchronize) for ids, w in cases]
    for got, want in zip(chained, stepwise):
        for a, b in zip(got, want):
            assert_bitwise_equal(a, b)
    check_graph_replay(lambda ids, w: moe_glue_chain(ids, x, w, E), [t.clone() for t in cases[0]], list(cases[1]))


def test_grouped_gemv_sees_offsets_written_just_before():
    # The grouped GEMV reads expert_offsets on the device: rewrite them with a kernel right
    # before each call, alternating two routings.
    E, N, K, k = 8, 512, 2048, 4
    g = torch.Generator().manual_seed(seed_for("pdl-grouped"))
    W = make_weight("normal", (E, N, K), torch.float16, gen=g)
    qw = kbit.quantize(W.to(DEV), k=k)
    flat = qw.to_layout("flat").to("cpu")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double().to(DEV)
    routings = [torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8], dtype=torch.int32),
                torch.tensor([0, 0, 3, 3, 3, 5, 8, 8, 8], dtype=torch.int32)]
    routings = [r.to(DEV) for r in routings]
    x = torch.randn(8, K, generator=g).half().to(DEV)
    offsets = torch.empty(E + 1, dtype=torch.int32, device=DEV)
    picks = [i % 2 == 1 for i in range(8)]
    ys = []
    for use_b in picks:
        torch.where(torch.tensor(use_b, device=DEV), routings[1], routings[0], out=offsets)
        ys.append(torch.ops.kbit.grouped_gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, offsets, k,
                                                   "auto"))
    torch.cuda.synchronize()
    for use_b, y in zip(picks, ys):
        o = routings[int(use_b)].tolist()
        ref = torch.cat([x[o[e]:o[e + 1]].double() @ W_hat[e].T for e in range(E)])
        assert rel_err(y, ref) <= GEMM_RTOL[torch.float16], use_b


def test_pdl_on_by_default():
    # Without it every test here would pass vacuously (nothing would start early).
    if os.environ.get("KBIT_PDL") == "0":
        pytest.skip("KBIT_PDL=0 in this environment")
    assert kbit._C.dependent_launch()


SCRIPT = """
import torch, kbit
g = torch.Generator().manual_seed(7)
qw = kbit.quantize(torch.randn(4096, 2048, generator=g).half(), k=4).to("cuda")
x = torch.randn(3, 2048, generator=g).half().cuda()
y = torch.cat([torch.ops.kbit.gemv_gemm(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4, d)
               for d in ("mma", "shuffle")])
torch.save(y.cpu(), {path!r})
"""


def run_script(tmp_path, name, env_value):
    path = str(tmp_path / f"{name}.pt")
    env = dict(os.environ, KBIT_PDL=env_value)
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(path=path)], env=env, capture_output=True, text=True)
    return r, path


def test_pdl_switch_same_bits_and_bad_value(tmp_path):
    on, on_path = run_script(tmp_path, "on", "1")
    off, off_path = run_script(tmp_path, "off", "0")
    assert on.returncode == 0, on.stderr[-2000:]
    assert off.returncode == 0, off.stderr[-2000:]
    assert_bitwise_equal(torch.load(on_path), torch.load(off_path), "KBIT_PDL=1 vs 0")
    bad, _ = run_script(tmp_path, "bad", "yes")
    assert bad.returncode != 0 and "KBIT_PDL must be 0" in bad.stderr, bad.stderr[-2000:]
    # set_dependent_launch overrides a bad value before it is read
    path = str(tmp_path / "override.pt")
    r = subprocess.run([sys.executable, "-c", "import kbit; kbit._C.set_dependent_launch(True)\n" + SCRIPT.format(path=path)],
                       env=dict(os.environ, KBIT_PDL="yes"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert_bitwise_equal(torch.load(path), torch.load(on_path), "set_dependent_launch over KBIT_PDL=yes")


@pytest.mark.parametrize("op", ["gemv_gemm", "mma_gemm", "dequant_cublas_gemm"])
def test_switch_and_prefetch_change_no_bits(op):
    # PDL and the L2 prefetch change when the work starts, never the arithmetic. (The dequantize + cuBLAS path
    # reads no prefetch setting: PDL alone changes there.)
    (qw, _), _ = quantized_pair(4, 4096, 2048, "weights")
    x = torch.randn(3, 2048, device=DEV).half()
    args = (x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
    fn = getattr(torch.ops.kbit, op)
    pdl, prefetch = kbit._C.set_dependent_launch(True), kbit._C._set_pdl_prefetch_bytes(-1)
    try:
        want = fn(*args)
        for on, nbytes in ((True, 0), (True, 65536), (False, -1)):
            kbit._C.set_dependent_launch(on)
            kbit._C._set_pdl_prefetch_bytes(nbytes)
            assert_bitwise_equal(fn(*args), want, f"PDL {on}, prefetch {nbytes}")
    finally:
        kbit._C.set_dependent_launch(pdl)
        kbit._C._set_pdl_prefetch_bytes(prefetch)
    assert kbit._C.dependent_launch() == pdl
    with pytest.raises(RuntimeError, match="PDL prefetch must be -1"):
        kbit._C._set_pdl_prefetch_bytes(7)
