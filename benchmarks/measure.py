"""The measuring loop: for each layer group, every applicable kernel at every k, dtype, M and L2
state; check once, then time. Shared by run.py (layers) and bench_model.py (one block)."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import torch

from . import registry
from . import shapes as S
from .cases import Case, Layer
from .check import is_correct, relative_error
from .harness import Timing, Work
from .plan import DTYPE_NAMES, DTYPES, Group, Plan
from .results import ERROR, OK, WRONG, Record, ResultSet
from .weights import CopyCache, LayerWeights, cold_copies, kbit_nbytes, tree_nbytes


class CudaBroken(RuntimeError):
    """The CUDA context hit a sticky error (e.g. an illegal address): nothing more can run."""


@dataclass
class Env:
    device: torch.device
    timer: object                # harness.GraphTimer or harness.FakeTimer
    l2_bytes: int
    copy_gbps: float
    deadline: float              # time.monotonic() after which no new timing starts
    log: Callable[[str], None] = print
    started: float = field(default_factory=time.monotonic)
    truncated: bool = False

    def out_of_time(self) -> bool:
        if time.monotonic() > self.deadline:
            self.truncated = True
        return self.truncated

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def nbytes(t) -> int:
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def after_failure(env: Env, exc: BaseException) -> str:
    """Message for a failed case; raises CudaBroken if the CUDA context is unusable now."""
    msg = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
    if env.device.type == "cuda":
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
            return "out of memory: " + msg
        try:
            torch.cuda.synchronize(env.device)
        except Exception as sticky:  # noqa: BLE001
            raise CudaBroken(f"CUDA context broken after {msg} ({sticky})") from exc
    return msg


def record_for(case: Case, kernel_name: str, family: str, l2: str, dtype: Optional[str] = "auto",
               run: int = 1) -> Record:
    """An (error until filled) layer record for case; dtype None = the kernel's own fixed dtype."""
    layer = case.layer
    return Record(table="layer", kernel=kernel_name, family=family, shape=layer.shape.name,
                  K=layer.shape.K, N=layer.shape.N, experts=layer.experts, m=case.m, tokens=case.tokens,
                  k=layer.k, dtype=DTYPE_NAMES[layer.dtype] if dtype == "auto" else dtype,
                  l2=l2, status=ERROR, run=run)


def fill_timing(rec: Record, t: Timing, work: Work, copies: int, weight_bytes: int) -> Record:
    rec.median_us, rec.p10_us, rec.p90_us, rec.spread = t.median_us, t.p10_us, t.p90_us, t.spread
    rec.samples_us, rec.calls, rec.replays, rec.method = t.samples_us, t.calls, t.replays, t.method
    rec.sm_mhz, rec.settle_ms = t.sm_mhz, t.settle_ms
    rec.copies, rec.weight_bytes, rec.bytes = copies, weight_bytes, work.bytes
    rec.gbps = work.bytes / (t.median_us * 1e-6) / 1e9 if t.median_us > 0 else None
    if t.note:
        rec.note = (rec.note + "; " if rec.note else "") + t.note
    return rec


def light_first_then_heavy_down(cases: Sequence[Case]) -> List[Case]:
    """cases by M: the smallest first, then the rest from the largest down."""
    by_m = sorted(cases, key=lambda c: c.m)
    return by_m[:1] + by_m[:0:-1]


class LayerRunner:
    """Runs the plan's layer groups into a ResultSet."""

    def __init__(self, env: Env, plan: Plan, results: ResultSet, kernels: Sequence[registry.Kernel],
                 run: int = 1):
        self.env, self.plan, self.results, self.kernels, self.run = env, plan, results, list(kernels), run
        self.count = 0

    def run_groups(self, groups: List[Group], checkpoint: Callable[[], None] = lambda: None) -> None:
        for g in groups:
            if self.env.out_of_time():
                break
            before, t0 = self.count, self.env.elapsed()
            self.run_group(g)
            label = S.label(g.shape, g.experts)
            self.env.log(f"[{self.env.elapsed():7.1f}s] {label}: {self.count - before} timings "
                         f"in {self.env.elapsed() - t0:.1f}s")
            checkpoint()

    def run_group(self, g: Group) -> None:
        lw = LayerWeights(g.shape, g.experts, self.env.device)
        copies = CopyCache()
        try:
            for k in [None] + list(self.plan.ks):
                for kernel in self.kernels:
                    if kernel.per_k != (k is not None):
                        continue
                    dtypes = self.plan.dtypes if kernel.per_dtype else self.plan.dtypes[:1]
                    for dname in dtypes:
                        layer = Layer(g.shape, g.experts, k, DTYPES[dname])
                        self.run_layer(kernel, layer, g, lw, copies)
                if k is not None:
                    self.add_floor(g, k)
                    lw.release_k(k)
                else:
                    lw.release(lambda key: isinstance(key, tuple) and key[0] == "dense")
                copies.clear()
        finally:
            del lw
            copies.clear()
            if self.env.device.type == "cuda":
                torch.cuda.empty_cache()

    def add_floor(self, g: Group, k: int) -> None:
        """The byte floor: kbit bytes (+ activations and output) / measured copy bandwidth."""
        wbytes = kbit_nbytes(g.shape, g.experts, k)
        for m in g.ms:
            case = Case(Layer(g.shape, g.experts, k, torch.float16), m)
            rec = record_for(case, "floor", "floor", "cold", dtype=None, run=self.run)
            total = wbytes + 2 * case.tokens * (g.shape.K + g.shape.N)
            rec.status, rec.weight_bytes, rec.bytes, rec.method = OK, wbytes, total, "computed"
            rec.median_us = total / (self.env.copy_gbps * 1e9) * 1e6
            rec.gbps = self.env.copy_gbps
            self.results.add(rec)

    def run_layer(self, kernel: registry.Kernel, layer: Layer, g: Group, lw: LayerWeights,
                  copies: CopyCache) -> None:
        cases = [c for c in (Case(layer, m) for m in g.ms) if kernel.applies(c)]
        if not cases or self.env.out_of_time():
            return
        why = kernel.unavailable(layer, self.env.device)
        if why:
            self.results.note(f"{kernel.name}: not run: {why}")
            return
        dtype_label = DTYPE_NAMES[layer.dtype] if kernel.per_dtype else None
        new = functools.partial(record_for, kernel_name=kernel.name, family=kernel.family,
                                dtype=dtype_label, run=self.run)
        try:
            setup = kernel.setup(layer, lw)
            weight_bytes = tree_nbytes(setup.weights)
        except CudaBroken:
            raise
        except Exception as exc:  # noqa: BLE001
            msg = after_failure(self.env, exc)
            self.results.note(f"{kernel.name}: setup failed for {g.shape.name} (E={g.experts}, k={layer.k}, "
                              f"{DTYPE_NAMES[layer.dtype]}): {msg}")
            for case in cases:
                for l2 in g.l2_by_m[case.m]:
                    self.results.add(failed(new(case, l2=l2), "setup: " + msg))
            return
        bound = Bound(kernel.name, setup, weight_bytes, cold_copies(weight_bytes, self.env.l2_bytes), new)
        # The smallest M first (a deadline must not cut the decode cells; it follows the previous kernel's
        # second smallest), then the largest down: a light cell right after a heavy one ran at the clocks the
        # power cap left (session 26: an H200 decode cell after cuBLAS at M = 1024 read 15-40% slow).
        for case in light_first_then_heavy_down(cases):
            if self.env.out_of_time():
                return
            self.run_case(bound, case, g.l2_by_m[case.m], lw, copies)

    def run_case(self, job: "Bound", case: Case, l2s, lw: LayerWeights, copies: CopyCache) -> None:
        """Check once, then time at each L2 state."""
        setup = job.setup
        try:
            inputs = setup.prepare(lw.inputs(case))
            out = setup.call(setup.weights, inputs)
            err, problem = relative_error(out, setup.reference(inputs))
            io_bytes = nbytes(getattr(inputs, "x", None)) + nbytes(out)
            del out
        except CudaBroken:
            raise
        except Exception as exc:  # noqa: BLE001
            msg = "check: " + after_failure(self.env, exc)
            for l2 in l2s:
                self.results.add(failed(job.new(case, l2=l2), msg))
            return
        work_flops = 2 * case.tokens * case.layer.shape.N * case.layer.shape.K
        for l2 in l2s:
            rec = job.new(case, l2=l2)
            rec.rel_err, rec.note = err, (problem or setup.note)
            try:
                weights = copies.get(setup.weights, job.cold_copies) if l2 == "cold" else [setup.weights]
                fns = [functools.partial(setup.call, w, inputs) for w in weights]
                label = f"{job.name}/{'moe' if case.layer.moe else 'dense'}"
                work = Work(job.weight_bytes + io_bytes, work_flops, label=label, hot=(l2 == "hot"))
                timing = self.env.timer.measure(fns, work)
                n_used = len(weights)
                del fns, weights
            except CudaBroken:
                raise
            except Exception as exc:  # noqa: BLE001
                self.results.add(failed(rec, "timing: " + after_failure(self.env, exc)))
                continue
            rec.status = OK if is_correct(err) else WRONG
            self.results.add(fill_timing(rec, timing, work, n_used, job.weight_bytes))
            self.count += 1


@dataclass
class Bound:
    """A kernel set up for one layer: what run_case needs."""
    name: str
    setup: registry.Setup
    weight_bytes: int
    cold_copies: int
    new: Callable[..., Record]     # makes this kernel's record for (case, l2)


def failed(rec: Record, msg: str) -> Record:
    rec.status, rec.error = ERROR, msg
    return rec
