"""The numerical contract of docs/numerics.md: non-finite activations are never hidden."""
import pytest
import torch

import kbit
from conftest import make_weight

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _weights(device, gen, E=0):
    shape = (E, 40, 288) if E else (40, 288)
    return kbit.quantize(make_weight("normal", shape, torch.float32, gen=gen), k=4).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("M", [1, 5, 40, 100])  # tensor-core kernel and dequantize + cuBLAS on CUDA
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_activations_propagate(device, M, bad, gen):
    qw = _weights(device, gen)
    x = torch.randn(M, 288, generator=gen).half()
    x[M // 2, 7] = bad
    y = kbit.gemm(x.to(device), qw).cpu()
    assert not torch.isfinite(y[M // 2]).any(), "the poisoned row must come out non-finite"
    if bad != bad:  # NaN in, NaN out (every output of the row)
        assert torch.isnan(y[M // 2]).all()
    others = torch.ones(M, dtype=torch.bool)
    others[M // 2] = False
    assert torch.isfinite(y[others]).all(), "other rows must stay finite"


@pytest.mark.parametrize("device", DEVICES)
def test_non_finite_activations_propagate_grouped(device, gen):
    qw = _weights(device, gen, E=4)
    x = torch.randn(9, 288, generator=gen).half()
    x[4, 100] = float("nan")
    off = torch.tensor([0, 3, 3, 7, 9], dtype=torch.int32, device=device)
    y = kbit.grouped_gemm(x.to(device), qw, off).cpu()
    assert torch.isnan(y[4]).all()
    assert torch.isfinite(y[torch.arange(9) != 4]).all()
