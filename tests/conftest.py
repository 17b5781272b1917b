"""Shared fixtures and sample inputs for the kbit tests.

* ``gen``: a torch.Generator seeded from the test's node id (fresh per test, reproducible).
* ``make_weight(kind, shape, dtype, k, gen)``: sample weights, normal and adversarial.
* ``gpu`` marker: skipped when CUDA is unavailable.
* ``poison_cuda_cache()``: fill the CUDA caching allocator's free memory with NaN bytes so an
  op that leaves part of its output unwritten is caught.
"""
from __future__ import annotations

import ctypes
import io
import os
import sys
import zlib

import pytest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kbit  # noqa: E402
import reference as R  # noqa: E402

KS = (2, 3, 4, 5)
W_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
ACT_DTYPES = (torch.float16, torch.bfloat16)
# relative Frobenius error allowed for gemm vs the float64 reference, per activation dtype
GEMM_RTOL = {torch.float16: 1e-3, torch.bfloat16: 4e-3}


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def seed_for(name: str) -> int:
    return zlib.crc32(name.encode())


@pytest.fixture
def gen(request) -> torch.Generator:
    """A CPU generator seeded from the test id: every test gets its own reproducible stream."""
    return torch.Generator().manual_seed(seed_for(request.node.nodeid))


def randn(shape, gen, dtype=torch.float32, scale=1.0):
    return (torch.randn(shape, generator=gen) * scale).to(dtype)


def quantized_module(module, gen, dtype, device, k=4):
    """module with its parameters random (N(0, 1 / fan_in), drawn from gen; scalars kept), cast to dtype, its
    nn.Linear layers converted by kbit.quantize_model at k bits, on device."""
    import kbit

    torch.manual_seed(int(torch.randint(0, 2 ** 31, (1,), generator=gen)))
    with torch.no_grad():
        for p in module.parameters():
            if p.dim():  # (a scalar keeps its value)
                p.copy_(randn(p.shape, gen, scale=p.shape[-1] ** -0.5))
    module = module.to(dtype)
    kbit.quantize_model(module, k=k, progress=False)
    return module.to(device)


def saved_and_loaded(state_dict, how, tmp_path):
    """state_dict through torch.save / torch.load (weights_only) or safetensors' save_file / load_file."""
    if how == "torch.save":
        buf = io.BytesIO()
        torch.save(state_dict, buf)
        buf.seek(0)
        return torch.load(buf, weights_only=True)
    from safetensors.torch import load_file, save_file

    save_file(state_dict, str(tmp_path / "state.safetensors"))
    return load_file(str(tmp_path / "state.safetensors"))


def rel_err(got, ref):
    """Relative Frobenius error of got against ref, in float64."""
    return ((got.double() - ref.double()).norm() / ref.double().norm()).item()


# ---------------------------------------------------------------------------------------------
# sample weights
# ---------------------------------------------------------------------------------------------
ADVERSARIAL_KINDS = (
    "zero_blocks",          # some all-zero blocks and an all-zero row next to normal data
    "outlier_per_block",    # one huge weight per block
    "subnormal_blocks",     # block absmax 2^-30 .. 1 of the row max: E4M4 subnormals and code 0
    "midpoints",            # weights exactly on codebook midpoints (times a power of two)
    "e4m4_exact",           # block absmax exactly an E4M4 value: down == up
    "outlier_row",          # one row 1e30 (fp16: 1e4) times the others
    "tiny_layer",           # the whole layer 1e-20 (fp16: 1e-6)
    "subnormal_weights",    # the whole layer subnormal: 1e-40 (fp16: 1e-7); row scale clamped
    "mixed_rows",           # rows spanning 1e-30 .. 1e30 (fp16: 1e-4 .. 1e4)
    "constant_blocks",      # blocks of one repeated value (every weight equals the absmax)
    "small_integers",       # integers in [-8, 8]: many exact ties
)


def _midpoint_values(k, n, gen):
    cb = kbit.codebook(k)
    mid = R.midpoints(cb)
    pick = torch.randint(0, mid.numel(), (n,), generator=gen)
    return mid[pick]


def make_weight(kind: str, shape, dtype=torch.float32, k: int = 4, gen=None) -> torch.Tensor:
    """A weight of ``shape`` ([N, K] or [E, N, K], K % 32 == 0) of the given kind, never all zero."""
    shape = tuple(shape)
    *lead, K = shape
    KB = K // 32
    f16 = dtype == torch.float16
    W = torch.randn(shape, generator=gen)
    if kind == "normal":
        pass
    elif kind == "zero_blocks":
        Wb = W.view(*lead, KB, 32)
        Wb[torch.rand(*lead, KB, generator=gen) < 0.3] = 0
        if shape[-2] > 1:
            W[..., 0, :] = 0
        W.view(-1)[-1] = 1.5  # never all zero
    elif kind == "outlier_per_block":
        Wb = W.view(*lead, KB, 32)
        pos = torch.randint(0, 32, (*lead, KB, 1), generator=gen)
        mag = 10.0 ** (1 + 2 * torch.rand(*lead, KB, 1, generator=gen))   # 10 .. 1000
        sign = torch.where(torch.rand(*lead, KB, 1, generator=gen) < 0.5, -1.0, 1.0)
        Wb.scatter_(-1, pos, mag * sign)
    elif kind == "subnormal_blocks":
        Wb = W.view(*lead, KB, 32)
        expo = torch.randint(0, 31, (*lead, KB, 1), generator=gen).float()
        expo[..., 0, :] = 0  # keep one full-size block per row
        if f16:
            expo = expo.clamp(max=12)
        Wb.mul_(torch.pow(2.0, -expo))
    elif kind == "midpoints":
        # x = w / s lands exactly on a midpoint: block absmax 2^j exactly (a power of two is an
        # E4M4 value at the top octave, so s = 2^j), the other weights mid * 2^j.
        Wb = W.view(*lead, KB, 32)
        Wb.copy_(_midpoint_values(k, Wb.numel(), gen).view(Wb.shape))
        j = torch.randint(-3, 4, (*lead, 1, 1), generator=gen).float()
        Wb[..., 0] = torch.where(torch.rand(*lead, KB, generator=gen) < 0.5, -1.0, 1.0)
        Wb.mul_(torch.pow(2.0, j))
    elif kind == "e4m4_exact":
        Wb = W.view(*lead, KB, 32)
        Wb.div_(Wb.abs().amax(dim=-1, keepdim=True))  # absmax 1 exactly
        codes = torch.randint(16, 256, (*lead, KB, 1), generator=gen)
        codes[..., 0, :] = 255
        Wb.mul_(R.E4M4[codes])  # absmax now exactly e4m4(code) (times a row scale of 1)
        Wb.clamp_(-248, 248)
    elif kind == "outlier_row":
        r = shape[-2] // 2
        W[..., r, :] = W[..., r, :].clamp(-5, 5) * 1e4 if f16 else W[..., r, :] * 1e30
    elif kind == "tiny_layer":
        W *= 1e-6 if f16 else 1e-20
    elif kind == "subnormal_weights":
        W *= 1e-7 if f16 else 1e-40
    elif kind == "mixed_rows":
        lo, hi = (-4, 4) if f16 else (-30, 30)
        e = torch.randint(lo, hi + 1, (*lead, 1), generator=gen).float()
        W *= torch.pow(10.0, e)
    elif kind == "constant_blocks":
        Wb = W.view(*lead, KB, 32)
        Wb.copy_(Wb[..., :1].expand_as(Wb))
    elif kind == "small_integers":
        W = torch.randint(-8, 9, shape, generator=gen).float()
        W.view(-1)[0] = 8.0
    else:
        raise ValueError(kind)
    W = W.to(dtype)
    assert torch.isfinite(W).all() and W.abs().max() > 0, kind
    return W


def random_flat(shape_nk, k, gen):
    """Random flat-layout tensors (any bits are a valid flat encoding): packed int32 bit-planes,
    absmax bytes over all 256 codes, power-of-two row scales 2^-126 .. 2^100."""
    *lead, N, K = shape_nk
    packed = torch.randint(-2 ** 31, 2 ** 31, (*lead, N, K // 32, k), generator=gen, dtype=torch.int64)
    packed = packed.to(torch.int32)
    absmax = torch.randint(0, 256, (*lead, N, K // 32), generator=gen, dtype=torch.int64).to(torch.uint8)
    e = torch.randint(-126, 101, (*lead, N), generator=gen).double()
    rs = torch.pow(2.0, e).float()
    return packed, absmax, rs


def random_codebook(k, gen, include_ends=False):
    """A valid user codebook: 2^k strictly ascending float32 values in [-1, 1]."""
    n = 1 << k
    while True:
        v = torch.sort(torch.rand(n, generator=gen) * 2 - 1).values
        if include_ends:
            v[0], v[-1] = -1.0, 1.0
        if (v[1:] > v[:-1]).all():
            return v.float().contiguous()


# ---------------------------------------------------------------------------------------------
# CUDA helpers
# ---------------------------------------------------------------------------------------------
def _memset_free_blocks(value: int) -> bool:
    """cuMemsetD8 every free block of the caching allocator (from torch.cuda.memory_snapshot)."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    torch.cuda.synchronize()
    for seg in torch.cuda.memory_snapshot():
        if seg.get("device", torch.cuda.current_device()) != torch.cuda.current_device():
            continue
        addr = seg["address"]
        for blk in seg["blocks"]:
            if blk["state"] == "inactive":
                rc = libcuda.cuMemsetD8_v2(ctypes.c_uint64(addr), ctypes.c_ubyte(value),
                                           ctypes.c_size_t(blk["size"]))
                if rc != 0:
                    return False
            addr += blk["size"]
    libcuda.cuCtxSynchronize()
    torch.cuda.synchronize()
    return True


def poison_cuda_cache(nbytes: int = 256 << 20) -> None:
    """Fill the CUDA caching allocator's free memory with 0xFF bytes (NaN for every float type,
    -1 for ints), so outputs allocated right after start out poisoned and an op that leaves part
    of its output unwritten is caught. Reserves a large block and a few small-pool segments
    first, so both pools have poisoned free memory."""
    if not torch.cuda.is_available():
        return
    free, _ = torch.cuda.mem_get_info()
    n = min(nbytes, max(free // 4, 4 << 20))
    bufs = [torch.empty(n, dtype=torch.uint8, device="cuda")]
    bufs += [torch.empty(1 << 20, dtype=torch.uint8, device="cuda") for _ in range(8)]
    for b in bufs:  # fallback when the driver API is not reachable: at least these blocks
        b.fill_(0xFF)
    del bufs
    _memset_free_blocks(0xFF)


@pytest.fixture
def poisoned_cuda():
    poison_cuda_cache()
    yield
