"""Every CUDA GEMM path on a second GPU in the same process (the shared-memory opt-in and the
occupancy behind the persistent grids are per device). Needs two CUDA devices."""
import pytest
import torch

import kbit
import reference as R
from conftest import GEMM_RTOL, make_weight, seed_for

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices"),
]


def _case(k, N, K, E=0):
    g = torch.Generator().manual_seed(seed_for(f"multi-gpu-{k}-{N}-{K}-{E}"))
    shape = (E, N, K) if E else (N, K)
    qh = kbit.quantize(make_weight("normal", shape, torch.float32, gen=g), k=k)
    flat = qh.to_layout("flat")
    W_hat = R.dequantize(flat.packed, flat.absmax, flat.row_scale, flat.codebook).double()
    return qh, W_hat


def _check(y, ref, dtype):
    assert not torch.isnan(y).any()
    err = float((y.double().cpu() - ref).norm() / ref.norm())
    assert err <= GEMM_RTOL[dtype], err


@pytest.mark.parametrize("k", [2, 4, 5])
def test_every_dense_path_on_each_device(k):
    qh, W_hat = _case(k, 300, 2080)
    dtype = torch.float16
    for M in (1, 16, 64, 200):
        g = torch.Generator().manual_seed(seed_for(f"multi-gpu-x-{M}"))
        x_cpu = torch.randn(M, 2080, generator=g).to(dtype)
        ref = x_cpu.double() @ W_hat.T
        for dev in ("cuda:0", "cuda:1"):  # the first launch of each kernel on cuda:1 comes second
            qw, x = qh.to(dev), x_cpu.to(dev)
            with torch.cuda.device(dev):
                ops = ["mma_gemm", "tile_gemm", "dequant_cublas_gemm"]
                ops += ["wgmma_gemm"] if kbit._C.wgmma_gemm_runs(k, M, x.device.index) else []
                for op in ops:
                    y = getattr(torch.ops.kbit, op)(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, k)
                    assert y.device == x.device
                    _check(y, ref, dtype)
            # without a device guard: the op follows its inputs' device
            _check(kbit.gemm(x, qw), ref, dtype)


def test_grouped_paths_on_each_device():
    E, N, K, k = 8, 257, 1024, 4
    qh, W_hat = _case(k, N, K, E)
    counts = [3, 0, 40, 1, 0, 17, 9, 2]
    off_cpu = torch.tensor([0] + torch.tensor(counts).cumsum(0).tolist(), dtype=torch.int32)
    g = torch.Generator().manual_seed(seed_for("multi-gpu-grouped-x"))
    x_cpu = torch.randn(sum(counts), K, generator=g).half()
    ref = torch.zeros(sum(counts), N, dtype=torch.float64)
    o = off_cpu.tolist()
    for e in range(E):
        ref[o[e]:o[e + 1]] = x_cpu[o[e]:o[e + 1]].double() @ W_hat[e].T
    for dev in ("cuda:0", "cuda:1"):
        qw, x, off = qh.to(dev), x_cpu.to(dev), off_cpu.to(dev)
        for op in (torch.ops.kbit.grouped_gemv_gemm, torch.ops.kbit.grouped_mma_gemm, torch.ops.kbit.grouped_tile_gemm):
            _check(op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, off, k), ref, torch.float16)
        _check(kbit.grouped_gemm(x, qw, off), ref, torch.float16)


def test_format_ops_on_the_second_device():
    g = torch.Generator().manual_seed(seed_for("multi-gpu-format"))
    W = make_weight("normal", (300, 2080), torch.float16, gen=g)
    want = kbit.quantize(W, k=3)
    got = kbit.quantize(W.to("cuda:1"), k=3)
    assert got.packed.device == torch.device("cuda:1")
    assert torch.equal(got.packed.cpu(), want.packed) and torch.equal(got.absmax.cpu(), want.absmax)
    assert torch.equal(kbit.dequantize(got).cpu(), kbit.dequantize(want))
