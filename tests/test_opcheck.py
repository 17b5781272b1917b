"""torch.library.opcheck of every kbit op (schema, fake kernel, autograd registration, AOT
dispatch) with CPU inputs, and torch.compile(fullgraph=True) over kbit.gemm."""
import time

import pytest
import torch
from torch.library import opcheck

import kbit
from conftest import make_weight

pytestmark = pytest.mark.filterwarnings("ignore:.*script_method.*:DeprecationWarning")

OPS = ["quantize", "dequantize", "repack", "unrepack", "dequantize_tiled", "gemm", "grouped_gemm",
       "grouped_gemm_silu_and_mul", "gemm_silu_and_mul", "moe_route",
       "moe_gather", "moe_route_gather", "silu_and_mul", "moe_combine", "grouped_gemm_slots", "router_topk"]


def op_args(name, k, stacked, gen):
    shape = (3, 19, 288) if stacked else (19, 288)
    N, K = shape[-2:]
    W = make_weight("normal", shape, torch.bfloat16, gen=gen)
    cb = kbit.codebook(k)
    p, a, r = torch.ops.kbit.quantize(W, cb, k)
    pt, at = torch.ops.kbit.repack(p, a)
    x = torch.randn(5, K, generator=gen).half()
    ids = torch.tensor([[0, 3], [1, 1], [4, 2], [3, -1], [0, 1]])  # the MoE glue ops: 5 tokens, top-2, 4 experts
    if name == "grouped_gemm_silu_and_mul":  # gate and up rows interleaved in 8s: N a multiple of 16
        pg, ag, rg = torch.ops.kbit.quantize(make_weight("normal", (3, 32, K), torch.bfloat16, gen=gen), cb, k)
        return (x, *torch.ops.kbit.repack(pg, ag), rg, cb, torch.tensor([0, 2, 2, 5], dtype=torch.int32), k)
    if name == "gemm_silu_and_mul":  # (the same rule)
        pg, ag, rg = torch.ops.kbit.quantize(make_weight("normal", (48, K), torch.bfloat16, gen=gen), cb, k)
        return (x, *torch.ops.kbit.repack(pg, ag), rg, cb, k)
    return {
        "quantize": (W, cb, k),
        "dequantize": (p, a, r, cb, k, torch.float16),
        "repack": (p, a),
        "unrepack": (pt, at, N, K),
        "dequantize_tiled": (pt, at, r, cb, k, K, torch.bfloat16),
        "gemm": (x, pt, at, r, cb, k),
        "grouped_gemm": (x, pt, at, r, cb, torch.tensor([0, 2, 2, 5], dtype=torch.int32), k),
        "mma_gemm": (x, pt, at, r, cb, k),
        "gemv_gemm": (x[:3].contiguous(), pt, at, r, cb, k),
        "tile_gemm": (x, pt, at, r, cb, k),
        "wgmma_gemm": (x, pt, at, r, cb, k),
        "dequant_cublas_gemm": (x, pt, at, r, cb, k),
        "grouped_mma_gemm": (x, pt, at, r, cb, torch.tensor([0, 2, 2, 5], dtype=torch.int32), k),
        "grouped_gemv_gemm": (x, pt, at, r, cb, torch.tensor([0, 2, 2, 5], dtype=torch.int32), k),
        "grouped_tile_gemm": (x, pt, at, r, cb, torch.tensor([0, 2, 2, 5], dtype=torch.int32), k),
        "moe_route": (ids, 4),
        "moe_gather": (x, torch.ops.kbit.moe_route(ids, 4)[1]),
        "moe_route_gather": (ids, 4, x),
        "silu_and_mul": (x[:, :64].contiguous(),),
        "moe_combine": (x[:, :32].repeat(2, 1), torch.rand(5, 2, generator=gen).half(), ids,
                        torch.ops.kbit.moe_route(ids, 4)[2], 4),
        "grouped_gemm_slots": (x, pt, at, r, cb, ids.clamp(0, 2), k),  # (ids of the 3 stacked experts)
        "router_topk": (torch.randn(5, 40, generator=gen).bfloat16(), 6, True),
    }[name]


CUDA_ONLY_OPS = ["mma_gemm", "gemv_gemm", "tile_gemm", "wgmma_gemm", "grouped_gemv_gemm", "grouped_mma_gemm",
                 "grouped_tile_gemm", "dequant_cublas_gemm"]  # the kernels behind gemm / grouped_gemm
MOE_OPS = ("moe_route", "moe_gather", "moe_route_gather", "silu_and_mul", "moe_combine", "router_topk")  # no weight: one case each
CASES = [(op, k, stacked) for op in OPS + CUDA_ONLY_OPS for k, stacked in ((3, False), (5, True))
         if not ((op.endswith("gemm") or op == "gemm_silu_and_mul") and not op.startswith("grouped") and stacked)
         and not (op.startswith("grouped") and not stacked) and not (op in MOE_OPS and stacked)]
CPU_CASES = [c for c in CASES if c[0] not in CUDA_ONLY_OPS]


@pytest.mark.parametrize("op,k,stacked", CPU_CASES, ids=[f"{o}-k{k}-{'E' if s else '2d'}" for o, k, s in CPU_CASES])
def test_opcheck(op, k, stacked, gen):
    args = op_args(op, k, stacked, gen)
    result = opcheck(getattr(torch.ops.kbit, op), args)
    assert set(result.values()) == {"SUCCESS"}, result


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_opcheck_optional_arguments(device, gen):
    # moe_combine without pair_row (grouped_gemm_slots' rows), grouped_gemm_slots with silu_and_mul (N % 16 == 0)
    x, pt, at, r, cb, ids, k = op_args("grouped_gemm_slots", 5, True, gen)
    y, w, ids5, _, E = op_args("moe_combine", 3, False, gen)
    pg, ag, rg = torch.ops.kbit.quantize(make_weight("normal", (3, 32, x.shape[1]), torch.bfloat16, gen=gen), cb, k)
    cases = [(torch.ops.kbit.moe_combine, (y, w, ids5, None, E)),
             (torch.ops.kbit.grouped_gemm_slots, (x, *torch.ops.kbit.repack(pg, ag), rg, cb, ids, k, True))]
    for op, args in cases:
        args = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)
        result = opcheck(op, args)
        assert set(result.values()) == {"SUCCESS"}, (op, result)


def test_torch_compile_fullgraph_gemm(gen):
    qw = kbit.quantize(make_weight("normal", (40, 288), gen=gen), k=4)

    @torch.compile(fullgraph=True)
    def f(x):
        return torch.relu(kbit.gemm(x, qw).float()) * 2

    x = torch.randn(3, 288, generator=gen).half()
    t0 = time.time()
    y = f(x)
    compile_s = time.time() - t0
    assert torch.equal(y, torch.relu(kbit.gemm(x, qw).float()) * 2)
    x2 = torch.randn(2, 7, 288, generator=gen).half()  # new leading dims: recompiles or is dynamic
    assert torch.equal(f(x2), torch.relu(kbit.gemm(x2, qw).float()) * 2)
    assert compile_s < 120, f"torch.compile took {compile_s:.0f} s"


@pytest.mark.gpu
@pytest.mark.parametrize("op,k,stacked", CASES, ids=[f"{o}-k{k}-{'E' if s else '2d'}" for o, k, s in CASES])
def test_opcheck_cuda(op, k, stacked, gen):
    if op == "wgmma_gemm" and not kbit._C.wgmma_gemm_runs(k, 5):
        pytest.skip("wgmma_gemm needs an sm_90a build on a compute-9.0 GPU")
    args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in op_args(op, k, stacked, gen))
    result = opcheck(getattr(torch.ops.kbit, op), args)
    assert set(result.values()) == {"SUCCESS"}, result


def test_gemv_gemm_fake_row_limit_is_the_kernels():
    # the fake kernel's limit is kGemvMaxRows = kGemvMaxTokens x kGemvMaxChunks (scalar_gemv.h)
    import re
    from pathlib import Path
    from kbit import _fake
    header = (Path(__file__).parents[1] / "csrc" / "cuda" / "gemm" / "scalar_gemv.h").read_text()
    tokens, chunks = (int(re.search(rf"constexpr int {n} = (\d+);", header).group(1))
                      for n in ("kGemvMaxTokens", "kGemvMaxChunks"))
    assert _fake.GEMV_MAX_ROWS == tokens * chunks


def test_gemv_gemm_fake_refuses_more_than_its_rows(gen):
    # torch.compile traces gemv_gemm through its fake kernel: M > kGemvMaxRows = 128 (M > 4 with
    # decode='shuffle') fails there, as the CUDA op does
    from torch._subclasses.fake_tensor import FakeTensorMode
    from kbit._fake import GEMV_MAX_ROWS as top
    x, pt, at, r, cb, k = op_args("gemv_gemm", 3, False, gen)
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert torch.ops.kbit.gemv_gemm(torch.empty(top, x.shape[1], dtype=x.dtype), pt, at, r, cb, k).shape == (top, 19)
        with pytest.raises(Exception, match=f"at most {top} rows"):
            torch.ops.kbit.gemv_gemm(torch.empty(top + 1, x.shape[1], dtype=x.dtype), pt, at, r, cb, k)
        assert torch.ops.kbit.gemv_gemm(torch.empty(4, x.shape[1], dtype=x.dtype), pt, at, r, cb, k, "shuffle").shape == (4, 19)
        with pytest.raises(Exception, match="decode='shuffle' takes at most 4 rows"):
            torch.ops.kbit.gemv_gemm(torch.empty(5, x.shape[1], dtype=x.dtype), pt, at, r, cb, k, "shuffle")
        for decode in ("auto", "mma", "shuffle"):
            assert torch.ops.kbit.gemv_gemm(torch.empty(2, x.shape[1], dtype=x.dtype), pt, at, r, cb, k, decode).shape == (2, 19)
        with pytest.raises(Exception, match="decode must be 'auto', 'mma' or 'shuffle'"):
            torch.ops.kbit.gemv_gemm(torch.empty(2, x.shape[1], dtype=x.dtype), pt, at, r, cb, k, "fast")
