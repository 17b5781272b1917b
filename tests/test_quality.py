"""Quantization quality: SQNR on Gaussian weights, and gemm error = quantization error."""
import pytest
import torch

import kbit
import reference as R
from conftest import seed_for

# SQNR (dB) of blockwise (32) normal-float quantization of N(0, 1) weights with the exact float
# absmax as block scale.
EXACT_DB = {2: 7.4, 3: 15.0, 4: 21.2, 5: 26.3}


@pytest.fixture(scope="module")
def gaussian():
    g = torch.Generator().manual_seed(seed_for("test_quality.gaussian"))
    return torch.randn(1024, 4096, generator=g)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_sqnr_exact_absmax_and_e4m4(gaussian, k):
    cb = kbit.codebook(k)
    exact_db = R.sqnr_db(gaussian, R.exact_absmax_dequantize(gaussian, cb))
    assert abs(exact_db - EXACT_DB[k]) <= 0.15, exact_db
    out = kbit.dequantize(kbit.quantize(gaussian, k=k, layout="flat"), torch.float32)
    e4m4_db = R.sqnr_db(gaussian, out)
    assert e4m4_db >= exact_db - 0.2, (e4m4_db, exact_db)
    # it actually gains: choosing the better bracketing code beats the exact absmax
    assert e4m4_db > exact_db, (e4m4_db, exact_db)


@pytest.mark.parametrize("k", [2, 4])
def test_best_of_two_beats_always_up(gaussian, k):
    # format.md: choosing the better of the two bracketing codes gains 0.2-0.5 dB over always
    # rounding the scale up
    W = gaussian[:256]
    cb = kbit.codebook(k)
    out = kbit.dequantize(kbit.quantize(W, k=k, layout="flat"), torch.float32)
    rs = R.row_scale(W)
    wn = R.normalized_blocks(W, rs)
    _, up = R.bracketing_codes(wn.abs().amax(-1))
    idx, _ = R.block_indices_and_error(wn, R.E4M4[up], cb)
    up_out = R.dequantize_from_indices(idx.reshape(256, -1), up, rs, cb)
    gain = R.sqnr_db(W, out) - R.sqnr_db(W, up_out)
    assert 0.1 < gain < 0.8, gain


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("k", [2, 5])
def test_gemm_error_is_quantization_error(gaussian, k, dtype):
    W = gaussian[:512, :2048].to(dtype)
    qw = kbit.quantize(W, k=k)
    g = torch.Generator().manual_seed(seed_for(f"quality-x-{k}-{dtype}"))
    x = torch.randn(64, 2048, generator=g).to(dtype)
    y = kbit.gemm(x, qw).double()
    exact = x.double() @ W.double().T
    deq = x.double() @ kbit.dequantize(qw, torch.float32).double().T
    quant_err = (exact - deq).norm() / exact.norm()
    kernel_err = (y - deq).norm() / deq.norm()
    total_err = (y - exact).norm() / exact.norm()
    assert kernel_err < quant_err / 10, (kernel_err, quant_err)
    assert abs(total_err - quant_err) < quant_err / 10
    # quantization error of the product ~ the weight's: 10^(-SQNR/20)
    w_err = 10 ** (-R.sqnr_db(W, kbit.dequantize(qw, torch.float32)) / 20)
    assert 0.7 * w_err < quant_err < 1.3 * w_err
