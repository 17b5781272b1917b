"""Helpers for the CUDA tests (tests/test_cuda_*.py)."""
from __future__ import annotations

import torch


def assert_bitwise_equal(got: torch.Tensor, want: torch.Tensor, name: str = "") -> None:
    """Same dtype, shape and bits (NaNs compare equal to NaNs in the same places)."""
    got = got.detach().cpu()
    want = want.detach().cpu()
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert got.shape == want.shape, (name, tuple(got.shape), tuple(want.shape))
    if got.is_floating_point():
        # compare the bit patterns: also distinguishes -0.0 from 0.0 and checks NaN positions
        itype = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
        nan_g, nan_w = torch.isnan(got), torch.isnan(want)
        assert torch.equal(nan_g, nan_w), f"{name}: NaN positions differ"
        got = torch.where(nan_g, torch.zeros((), dtype=got.dtype), got).view(itype)
        want = torch.where(nan_w, torch.zeros((), dtype=want.dtype), want).view(itype)
    diff = got != want
    if diff.any():
        first = tuple(diff.nonzero()[0].tolist())
        raise AssertionError(f"{name}: {int(diff.sum())} of {diff.numel()} elements differ, first at "
                             f"{first}: got {got[first]}, want {want[first]}")


def assert_all_bitwise_equal(got, want, names) -> None:
    for g, w, n in zip(got, want, names):
        assert_bitwise_equal(g, w, n)


def cuda_kernel_names(fn) -> set:
    """The CUDA kernels fn() launches, by name (torch.profiler)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}


def capture_graph(fn, *static_inputs):
    """Warm fn up on a side stream, capture one call into a CUDA graph; returns (graph, outputs)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(*static_inputs)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*static_inputs)
    torch.cuda.synchronize()
    return graph, out


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check_graph_replay(fn, static_inputs, new_inputs, names=None):
    """Capture fn on static_inputs; replay must equal eager fn bitwise, before and after copying
    new_inputs (same shapes/dtypes) into the static input tensors."""
    graph, out = capture_graph(fn, *static_inputs)
    out = as_tuple(out)
    names = names or [f"out{i}" for i in range(len(out))]
    graph.replay()
    torch.cuda.synchronize()
    assert_all_bitwise_equal(out, as_tuple(fn(*static_inputs)), names)
    for s, n in zip(static_inputs, new_inputs):
        if isinstance(s, torch.Tensor):
            s.copy_(n)
    graph.replay()
    torch.cuda.synchronize()
    eager = as_tuple(fn(*new_inputs))
    assert_all_bitwise_equal(out, eager, names)
    # replaying again (no input change) is idempotent
    graph.replay()
    torch.cuda.synchronize()
    assert_all_bitwise_equal(out, eager, names)
