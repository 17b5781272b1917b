"""Every bad input raises a clear error naming the argument (API and raw ops)."""
import ast
import subprocess
import sys

import pytest
import torch

import kbit
from conftest import make_weight

ERRORS = (ValueError, TypeError, RuntimeError)
K_ = r"\bk\b"


@pytest.fixture
def W(gen):
    return make_weight("normal", (17, 64), gen=gen)


@pytest.fixture
def qw(W):
    return kbit.quantize(W, k=4)


@pytest.fixture
def qe(gen):
    return kbit.quantize(make_weight("normal", (3, 17, 64), gen=gen), k=4)


# ---------------------------------------------------------------------------------------------
# k and codebooks
# ---------------------------------------------------------------------------------------------
BAD_K = [True, False, 0, 1, 6, 8, -4, 4.0, "4", None]


@pytest.mark.parametrize("k", BAD_K, ids=repr)
def test_bad_k(W, k):
    with pytest.raises(ERRORS, match=K_):
        kbit.quantize(W, k=k)
    with pytest.raises(ERRORS, match=K_):
        kbit.codebook(k)


@pytest.mark.parametrize("k", [0, 1, 6, 32])
def test_bad_k_raw_op(W, k):
    cb = torch.linspace(-1, 1, 1 << min(k, 5))
    with pytest.raises(RuntimeError, match=K_):
        torch.ops.kbit.quantize(W, cb, k)


BAD_CODEBOOKS = {
    "too short": [-1.0, 0.0, 1.0],
    "too long": [-1.0, -0.5, 0.0, 0.5, 1.0],
    "2-D": [[-1.0, -0.5], [0.5, 1.0]],
    "unsorted": [-1.0, 0.5, -0.5, 1.0],
    "descending": [1.0, 0.5, -0.5, -1.0],
    "duplicate": [-1.0, 0.0, 0.0, 1.0],
    "above 1": [-1.0, 0.0, 0.5, 1.0001],
    "below -1": [-1.5, 0.0, 0.5, 1.0],
    "nan": [-1.0, float("nan"), 0.5, 1.0],
    "inf": [-1.0, 0.0, 0.5, float("inf")],
    "int tensor": torch.tensor([-1, 0, 1, 2]),
    "bool tensor": torch.tensor([False, True, True, True]),
    "string": "abcd",
}


@pytest.mark.parametrize("name", list(BAD_CODEBOOKS))
def test_bad_codebook(W, name):
    with pytest.raises(ERRORS, match="codebook"):
        kbit.quantize(W, k=2, codebook=BAD_CODEBOOKS[name])


def test_bad_codebook_raw_op(W):
    with pytest.raises(RuntimeError, match="codebook"):
        torch.ops.kbit.quantize(W, kbit.codebook(3), 4)
    with pytest.raises(RuntimeError, match="codebook"):
        torch.ops.kbit.quantize(W, kbit.codebook(4).double(), 4)


# ---------------------------------------------------------------------------------------------
# weights
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (64,), (2, 3, 4, 64)], ids=str)
def test_bad_weight_rank(shape):
    with pytest.raises(ERRORS, match="W"):
        kbit.quantize(torch.randn(shape), k=4)


@pytest.mark.parametrize("K", [0, 1, 31, 48, 100])
def test_bad_weight_k_dim(K):
    with pytest.raises(ERRORS, match="K"):
        kbit.quantize(torch.randn(4, K), k=4)
    if K:
        with pytest.raises(RuntimeError, match="K"):
            torch.ops.kbit.quantize(torch.randn(4, K), kbit.codebook(4), 4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.int8, torch.bool, torch.complex64], ids=str)
def test_bad_weight_dtype(dtype):
    W = torch.ones(4, 64, dtype=dtype)
    with pytest.raises(ERRORS, match="W"):
        kbit.quantize(W, k=4)


def test_weight_not_a_tensor():
    with pytest.raises(TypeError, match="W"):
        kbit.quantize([[1.0] * 32], k=4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("shape", [(5, 64), (2, 5, 64)], ids=str)
def test_non_finite_weights(shape, dtype, bad, gen):
    W = make_weight("normal", shape, dtype, gen=gen)
    W.view(-1)[77] = bad
    with pytest.raises(ValueError, match="non-finite"):
        kbit.quantize(W, k=3)


def test_zero_rows_rejected_or_usable():
    # format.md: 'Any N >= 1 is allowed': N = 0 is refused up front, or works everywhere
    try:
        qw = kbit.quantize(torch.randn(0, 64), k=4)
    except ValueError as e:
        assert "N" in str(e)
        return
    assert kbit.dequantize(qw).shape == (0, 64)
    assert kbit.gemm(torch.randn(3, 64).half(), qw).shape == (3, 0)


_EMPTY_SNIPPET = """
import torch, kbit
i32, u8 = torch.int32, torch.uint8
cb = kbit.codebook(4)
cases = {
    "api quantize E=0": lambda: kbit.quantize(torch.randn(0, 3, 64), k=4),
    "quantize E=0": lambda: torch.ops.kbit.quantize(torch.randn(0, 3, 64), cb, 4),
    "quantize N=0": lambda: torch.ops.kbit.quantize(torch.randn(0, 64), cb, 4),
    "repack E=0": lambda: torch.ops.kbit.repack(torch.zeros(0, 3, 2, 4, dtype=i32),
                                                torch.zeros(0, 3, 2, dtype=u8)),
    "repack N=0": lambda: torch.ops.kbit.repack(torch.zeros(0, 2, 4, dtype=i32), torch.zeros(0, 2, dtype=u8)),
    "dequantize E=0": lambda: torch.ops.kbit.dequantize(torch.zeros(0, 3, 2, 4, dtype=i32),
        torch.zeros(0, 3, 2, dtype=u8), torch.ones(0, 3), cb, 4, torch.float32),
    "unrepack E=0": lambda: torch.ops.kbit.unrepack(torch.zeros(0, 1, 1, 4, 32, 4, dtype=i32),
        torch.zeros(0, 1, 1, 128, dtype=u8), 3, 64),
    "dequantize_tiled E=0": lambda: torch.ops.kbit.dequantize_tiled(torch.zeros(0, 1, 1, 4, 32, 4, dtype=i32),
        torch.zeros(0, 1, 1, 128, dtype=u8), torch.ones(0, 3), cb, 4, 64, torch.float32),
    "grouped_gemm E=0": lambda: torch.ops.kbit.grouped_gemm(torch.zeros(0, 64, dtype=torch.half),
        torch.zeros(0, 1, 1, 4, 32, 4, dtype=i32), torch.zeros(0, 1, 1, 128, dtype=u8), torch.ones(0, 3),
        cb, torch.zeros(1, dtype=i32), 4),
}
for name, fn in cases.items():
    try:
        out = fn()
    except (ValueError, RuntimeError) as e:
        print(name, "|", "ERROR", str(e).splitlines()[0], flush=True)
    else:
        shapes = [tuple(t.shape) for t in (out if isinstance(out, tuple) else [out])] \
            if not isinstance(out, kbit.QuantizedWeight) else [out.shape]
        print(name, "|", "OK", shapes, flush=True)
"""


def test_empty_stacks_do_not_crash():
    # Empty expert stacks (E = 0) and N = 0 once crashed the process (experts == 0 was read as
    # '2-D'). Each op must raise a clear error or return an empty result: run in a child process
    # so that a crash cannot take the test session down.
    proc = subprocess.run([sys.executable, "-c", _EMPTY_SNIPPET], capture_output=True, text=True,
                          timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if " | " in ln]
    assert proc.returncode == 0, f"exit code {proc.returncode} after {lines}: {proc.stderr[-800:]}"
    assert len(lines) == 9, proc.stdout
    for line in lines:
        name, result = line.split(" | ", 1)
        if result.startswith("ERROR"):
            assert "kbit" in result, line
        else:  # an empty result: every output has a zero dim
            shapes = ast.literal_eval(result[len("OK "):])
            assert all(0 in shape for shape in shapes), line


# ---------------------------------------------------------------------------------------------
# activations
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 63), (2, 65), (2, 32), (64, 2), (2, 0)], ids=str)
def test_x_wrong_last_dim(qw, shape):
    with pytest.raises(ValueError, match=r"\bx\b"):
        kbit.gemm(torch.randn(shape).half(), qw)


def test_x_zero_dim(qw):
    with pytest.raises(ERRORS, match=r"\bx\b"):
        kbit.gemm(torch.tensor(1.0).half(), qw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64, torch.int8],
                         ids=str)
def test_x_bad_dtype(qw, qe, dtype):
    x = torch.ones(3, 64, dtype=dtype)
    with pytest.raises(TypeError, match=r"\bx\b"):
        kbit.gemm(x, qw)
    with pytest.raises(TypeError, match=r"\bx\b"):
        kbit.grouped_gemm(x, qe, torch.tensor([0, 1, 2, 3], dtype=torch.int32))


def test_x_not_a_tensor(qw):
    with pytest.raises(TypeError, match=r"\bx\b"):
        kbit.gemm([[1.0] * 64], qw)


def test_weight_not_quantized(W):
    with pytest.raises(TypeError, match="QuantizedWeight"):
        kbit.gemm(torch.randn(2, 64).half(), W)
    with pytest.raises(TypeError, match="QuantizedWeight"):
        kbit.dequantize(W)
    with pytest.raises(TypeError, match="QuantizedWeight"):
        kbit.grouped_gemm(torch.randn(2, 64).half(), W, torch.tensor([0, 2], dtype=torch.int32))


def test_gemm_vs_grouped_weight_kind(qw, qe):
    x = torch.randn(3, 64).half()
    with pytest.raises(ValueError, match="grouped_gemm"):
        kbit.gemm(x, qe)
    with pytest.raises(ValueError, match="expert stack"):
        kbit.grouped_gemm(x, qw, torch.tensor([0, 3], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"\bx\b"):
        kbit.grouped_gemm(x.view(1, 3, 64), qe, torch.tensor([0, 1, 2, 3], dtype=torch.int32))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.uint8], ids=str)
def test_dequantize_bad_dtype(qw, dtype):
    with pytest.raises(TypeError, match="dtype"):
        kbit.dequantize(qw, dtype)


@pytest.mark.parametrize("layout", ["rows", "FLAT", None])
def test_bad_layout(W, layout):
    with pytest.raises(ValueError, match="layout"):
        kbit.quantize(W, k=4, layout=layout)


# ---------------------------------------------------------------------------------------------
# devices ('meta' stands in for a second device when there is no GPU)
# ---------------------------------------------------------------------------------------------
def test_x_on_other_device(qw, qe):
    x = torch.empty(3, 64, dtype=torch.half, device="meta")
    with pytest.raises(ValueError, match=r"x is on meta"):
        kbit.gemm(x, qw)
    with pytest.raises(ValueError, match=r"x is on meta"):
        kbit.grouped_gemm(x, qe, torch.tensor([0, 1, 1, 3], dtype=torch.int32))


def test_weight_on_other_device(qw):
    with pytest.raises(ValueError, match="weight is on meta"):
        kbit.gemm(torch.randn(3, 64).half(), qw.to("meta"))


def test_expert_offsets_on_other_device(qe):
    off = torch.tensor([0, 1, 1, 3], dtype=torch.int32, device="meta")
    with pytest.raises(ValueError, match="expert_offsets"):
        kbit.grouped_gemm(torch.randn(3, 64).half(), qe, off)


def test_grouped_ops_on_other_device(qe):
    # the ops themselves (their fake kernels take a meta argument): every tensor on x's device, as the real ops ask
    x, ids = torch.randn(2, 64).half(), torch.tensor([[0, 1], [2, 0]])
    off = torch.tensor([0, 1, 1, 2], dtype=torch.int32)
    w = (qe.packed, qe.absmax, qe.row_scale, qe.codebook)
    for args, what in (((x.to("meta"), *w, ids), "x is on meta but the weight"),
                       ((x, *w, ids.to("meta")), "top_k_index is on meta")):
        with pytest.raises(RuntimeError, match=what):
            torch.ops.kbit.grouped_gemm_slots(*args, 4)
    with pytest.raises(RuntimeError, match="expert_offsets is on meta"):
        torch.ops.kbit.grouped_gemm(x, *w, off.to("meta"), 4)


# ---------------------------------------------------------------------------------------------
# expert offsets
# ---------------------------------------------------------------------------------------------
BAD_OFFSETS = {
    "not monotone": ([0, 3, 2, 4], torch.int32),
    "first not 0": ([1, 2, 3, 4], torch.int32),
    "negative": ([0, -1, 2, 4], torch.int32),
    "sum < T": ([0, 1, 2, 3], torch.int32),
    "sum > T": ([0, 1, 2, 5], torch.int32),
    "too short": ([0, 2, 4], torch.int32),
    "too long": ([0, 1, 2, 3, 4], torch.int32),
    "int64": ([0, 1, 2, 4], torch.int64),
    "float": ([0, 1, 2, 4], torch.float32),
    "2-D": ([[0, 1, 2, 4]], torch.int32),
}


@pytest.mark.parametrize("name", list(BAD_OFFSETS))
def test_bad_expert_offsets(qe, name):
    values, dtype = BAD_OFFSETS[name]
    x = torch.randn(4, 64).half()
    with pytest.raises(ERRORS, match="expert_offsets"):
        kbit.grouped_gemm(x, qe, torch.tensor(values, dtype=dtype))


def test_expert_offsets_not_a_tensor(qe):
    with pytest.raises(TypeError, match="expert_offsets"):
        kbit.grouped_gemm(torch.randn(4, 64).half(), qe, [0, 1, 2, 4])


# ---------------------------------------------------------------------------------------------
# M = 0
# ---------------------------------------------------------------------------------------------
def test_m0_empty_results(qw, qe):
    y = kbit.gemm(torch.empty(0, 64, dtype=torch.half), qw)
    assert y.shape == (0, 17) and y.dtype == torch.half
    y = kbit.gemm(torch.empty(2, 0, 64, dtype=torch.bfloat16), qw)
    assert y.shape == (2, 0, 17) and y.dtype == torch.bfloat16
    y = torch.ops.kbit.gemm(torch.empty(0, 64, dtype=torch.half), qw.packed, qw.absmax, qw.row_scale,
                            qw.codebook, 4)
    assert y.shape == (0, 17)
    y = kbit.grouped_gemm(torch.empty(0, 64, dtype=torch.half), qe, torch.zeros(4, dtype=torch.int32))
    assert y.shape == (0, 17)


# ---------------------------------------------------------------------------------------------
# raw ops: malformed layout tensors
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def flat(W):
    return torch.ops.kbit.quantize(W, kbit.codebook(4), 4)


def _raw_dequantize_cases(p, a, r, cb):
    f32 = torch.float32
    return {
        "packed int64": ("packed", (p.long(), a, r, cb, 4, f32)),
        "packed 2-D": ("packed", (p[0], a[0], r, cb, 4, f32)),
        "packed non-contiguous": ("contiguous",
                                  (p.transpose(0, 1).contiguous().transpose(0, 1), a, r, cb, 4, f32)),
        "absmax int32": ("absmax", (p, a.int(), r, cb, 4, f32)),
        "absmax shape": ("absmax", (p, a[:, :1].contiguous(), r, cb, 4, f32)),
        "row_scale shape": ("row_scale", (p, a, r[:-1], cb, 4, f32)),
        "row_scale fp64": ("row_scale", (p, a, r.double(), cb, 4, f32)),
        "codebook fp64": ("codebook", (p, a, r, cb.double(), 4, f32)),
        "codebook size": ("codebook", (p, a, r, cb[:8], 4, f32)),
        "k mismatch": (K_, (p, a, r, kbit.codebook(3), 3, f32)),
        "dtype int": ("dtype", (p, a, r, cb, 4, torch.int32)),
    }


RAW_DEQUANTIZE_CASES = ["packed int64", "packed 2-D", "packed non-contiguous", "absmax int32",
                        "absmax shape", "row_scale shape", "row_scale fp64", "codebook fp64",
                        "codebook size", "k mismatch", "dtype int"]


@pytest.mark.parametrize("case", RAW_DEQUANTIZE_CASES)
def test_raw_dequantize_rejects(flat, case):
    p, a, r = flat
    match, args = _raw_dequantize_cases(p, a, r, kbit.codebook(4))[case]
    with pytest.raises(RuntimeError, match=match):
        torch.ops.kbit.dequantize(*args)


def test_raw_repack_unrepack_reject(flat):
    p, a, _ = flat
    with pytest.raises(RuntimeError, match="absmax"):
        torch.ops.kbit.repack(p, a.int())
    with pytest.raises(RuntimeError, match=K_):
        torch.ops.kbit.repack(torch.zeros(17, 2, 6, dtype=torch.int32), a)
    pt, at = torch.ops.kbit.repack(p, a)
    with pytest.raises(RuntimeError, match="N="):
        torch.ops.kbit.unrepack(pt, at, 40, 64)
    with pytest.raises(RuntimeError, match="K"):
        torch.ops.kbit.unrepack(pt, at, 17, 48)
    with pytest.raises(RuntimeError, match="N"):
        torch.ops.kbit.unrepack(pt, at, 0, 64)
    with pytest.raises(RuntimeError, match="absmax"):
        torch.ops.kbit.unrepack(pt, at[:1].contiguous(), 17, 64)


def test_raw_gemm_rejects(qw, qe):
    x = torch.randn(2, 64).half()
    args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook)
    with pytest.raises(RuntimeError, match=r"\bx\b"):
        torch.ops.kbit.gemm(x.float(), *args, 4)
    with pytest.raises(RuntimeError, match=r"\bx\b"):
        torch.ops.kbit.gemm(x.view(1, 2, 64), *args, 4)
    with pytest.raises(RuntimeError, match="K=288"):
        torch.ops.kbit.gemm(torch.randn(2, 288).half(), *args, 4)  # beyond the tile group of K=64
    with pytest.raises(RuntimeError, match=K_):
        torch.ops.kbit.gemm(x, qw.packed, qw.absmax, qw.row_scale, kbit.codebook(3), 3)
    with pytest.raises(RuntimeError, match="row_scale|expert"):
        torch.ops.kbit.gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, 4)
    off = torch.tensor([0, 1, 1, 2], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="row_scale|expert"):
        torch.ops.kbit.grouped_gemm(x, *args, off, 4)
    with pytest.raises(RuntimeError, match="expert_offsets"):
        torch.ops.kbit.grouped_gemm(x, qe.packed, qe.absmax, qe.row_scale, qe.codebook, off[:3], 4)


def test_tiled_weight_view_not_on_a_tile_boundary_raises():
    # The GEMM kernels load tiles with 16-byte vectors; a view of the tiled words that starts
    # inside a tile must be refused with a clear error, never read (on CUDA: a fault).
    qw = kbit.quantize(torch.randn(32, 256), k=4)
    flat_words = torch.cat([torch.zeros(1, dtype=torch.int32), qw.packed.reshape(-1)])
    shifted = flat_words[1:].view(qw.packed.shape)  # same values, 4 bytes past an aligned start
    assert shifted.data_ptr() % 16 != 0
    with pytest.raises(RuntimeError, match="16-byte boundary"):
        torch.ops.kbit.dequantize_tiled(shifted, qw.absmax, qw.row_scale, qw.codebook, 4, 256,
                                        torch.float32)
