"""The one timing harness every benchmark here uses.

Method (as in the shared design notes, design/h100-anchors.md): warm up outside the timed region, capture
`calls` back-to-back calls into one CUDA graph, replay it `replays` times with a pair of CUDA
events around each replay, and report per-call time = replay time / calls: the median over
replays, and the spread (p90 - p10) / median. For a cold L2 the callables are bound to
different weight copies (call i uses copy i % C) so each copy is re-read only after >= 4x L2 of
other weights; for a hot L2 there is one copy. If a callable cannot be captured (it syncs with
the host, say) the same loop is timed eagerly with events and the timing is marked "eager".

Before the timed replays the timer waits (up to TimerConfig.settle_s) while NVML says the GPU's clocks are held
down by its power or thermal limits, then replays once more: a heavy timing (cuBLAS at M = 1024) leaves an H200
at 1365 MHz instead of 1980 for up to a second, and a decode kernel timed right after it read 40% slow (session
26, scripts/probe_heat.py). The limit reasons clear before the clocks are back, so after a timing over 4x
heavier per call it can first idle (TimerConfig.cool_s; ab_paths: 1 s), and the benchmarks order their cells
so that few follow a much heavier one. Each timing records the SM clock NVML reports after its
replays and how long it waited.

TimerConfig.sustain_s > 0 times the other regime, sustained load: no settling, the graph replayed back to back for
that long, the median of the second half's replays (method "sustained"), at the clocks the power cap holds them to.

FakeTimer returns made-up timings from a bytes/flops model, for --dry-run on a machine
without a GPU: it exercises everything but the numbers.
"""
from __future__ import annotations

import math
import re
import time
import warnings
import zlib
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch

Fn = Callable[[], object]


@dataclass
class Work:
    """What one call must move and compute (for GB/s, floors and the fake timer)."""
    bytes: int           # weights in the kernel's format + activations read + output written
    flops: int           # 2 * tokens * N * K
    label: str = ""
    hot: bool = False


@dataclass
class Timing:
    samples_us: List[float]      # per-call time of each replay
    calls: int                   # calls per replay (graph size)
    replays: int                 # replays timed (sustained: the second half's, whose samples these are)
    method: str                  # "graph", "sustained" (TimerConfig.sustain_s), "eager" or "fake"
    note: str = ""
    sm_mhz: Optional[int] = None # the SM clock NVML reported after the replays (its last sample period)
    settle_ms: float = 0.0       # waited for the power / thermal clock limits to lift before the replays

    @property
    def median_us(self) -> float:
        return float(np.median(self.samples_us))

    @property
    def p10_us(self) -> float:
        return float(np.percentile(self.samples_us, 10))

    @property
    def p90_us(self) -> float:
        return float(np.percentile(self.samples_us, 90))

    @property
    def spread(self) -> float:
        """(p90 - p10) / median over the replays."""
        med = self.median_us
        return (self.p90_us - self.p10_us) / med if med > 0 else float("nan")

    def to_json(self) -> Dict:
        d = asdict(self)
        d.update(median_us=self.median_us, p10_us=self.p10_us, p90_us=self.p90_us, spread=self.spread)
        return d


@dataclass
class TimerConfig:
    replays: int = 15            # replays per timing (fewer if the graph is long, see max_seconds)
    min_replays: int = 5
    min_calls: int = 32          # calls per graph for short kernels
    graph_target_us: float = 2000.0  # longer kernels: about this much work per graph, >= 2 calls
    max_seconds: float = 0.25    # cap on replays * graph time per timing
    warmup: int = 2
    settle_s: float = 2.0        # at most this long waiting for power / thermal clock limits to lift
    # After a timing over 4x heavier per call, first idle this long (0: not): the limit reasons clear before
    # the clocks are back (session 26, runs 9-10; 1 s after 3 s at the 700 W limit an H200 was back at
    # 1980 MHz, scripts/probe_heat.py). ab_paths turns it on (1 s); the suite and the tuning sweeps, whose
    # kernels or paths at one M differ by more than 4x, rely on their M order.
    cool_s: float = 0.0
    # > 0: the sustained regime. No settling and no cool idle: the graph replays back to back for this many
    # seconds and the timing is the median of the second half's replays, at the clocks the power cap holds them to
    # (session 55, scripts/probe_power.py, 0.8-1.2 s phases on the H200: cuBLAS fp16 from Qwen3 Q at M = 256 up and
    # kbit.gemm from M = 512 up ran at the 700 W cap, cuBLAS at 1335-1650 MHz, the wgmma kernel at 1425-1965). For
    # heavy cells this is the regime a long prefill runs in; the settled default times them partly capped.
    sustain_s: float = 0.0


def calls_per_graph(est_us: float, copies: int, cfg: TimerConfig) -> int:
    """Back-to-back calls in one graph: min_calls for short kernels, fewer (>= 2) for long ones,
    and a whole number of passes over the weight copies (at least one)."""
    n = max(2, min(cfg.min_calls, math.ceil(cfg.graph_target_us / max(est_us, 1e-3))))
    if copies > 1:
        n = math.ceil(max(n, copies) / copies) * copies
    return n


def replays_for(graph_us: float, cfg: TimerConfig) -> int:
    fit = int(cfg.max_seconds * 1e6 / max(graph_us, 1e-3))
    return max(cfg.min_replays, min(cfg.replays, fit))


class ClockWatch:
    """The GPU's SM clock and clock-limit reasons through NVML (pynvml, as torch.cuda.clock_rate); inert
    (no waiting, no clock) where NVML cannot be read, with one warning."""
    # SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake (nvmlClocksEventReason*)
    LIMITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
    STUCK_WAITS = 3  # waits in a row that hit the limit: a limit that never lifts; stop waiting

    def __init__(self, device: torch.device):
        self._nvml = self._handle = self._reasons = None
        self._stuck = 0
        try:
            import pynvml
            pynvml.nvmlInit()
            uuid = str(torch.cuda.get_device_properties(device).uuid)
            self._handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else "GPU-" + uuid)
            self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            self._nvml = pynvml
            self.limited()
        except Exception as exc:  # no pynvml (nvidia-ml-py), no driver access
            self._off(f"cannot read NVML ({type(exc).__name__}: {exc})")

    def _off(self, why: str) -> None:
        if self._nvml is not None or self._handle is None:
            warnings.warn(f"benchmarks: {why}; timings neither wait out clock limits nor record the SM clock",
                          stacklevel=3)
        self._nvml = None

    def nvml(self):
        """(pynvml, the device's handle, the clock-limit reasons function) for other NVML reads (scripts/probe_power.py),
        or None where NVML cannot be read."""
        return None if self._nvml is None else (self._nvml, self._handle, self._reasons)

    def sm_mhz(self) -> Optional[int]:
        if self._nvml is None:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))
        except Exception as exc:
            self._off(f"NVML failed ({type(exc).__name__}: {exc})")
            return None

    def limited(self) -> bool:
        if self._nvml is None:
            return False
        try:
            return bool(self._reasons(self._handle) & self.LIMITS)
        except Exception as exc:
            self._off(f"NVML failed ({type(exc).__name__}: {exc})")
            return False

    def settle(self, limit_s: float, cool_s: float = 0.0) -> float:
        """Idle cool_s first, then wait while a power or thermal limit holds the clocks down, at most limit_s
        in all; the seconds waited (0.0 where nothing held). After STUCK_WAITS limit waits in a row that hit
        limit_s it stops waiting on the limits. (The idle needs no NVML.)"""
        start = time.monotonic()
        if cool_s > 0:
            time.sleep(min(cool_s, limit_s))
        if self._stuck >= self.STUCK_WAITS or not self.limited():
            return time.monotonic() - start if cool_s > 0 else 0.0
        while self.limited() and time.monotonic() - start < limit_s:
            time.sleep(0.005)
        waited = time.monotonic() - start
        self._stuck = self._stuck + 1 if waited >= limit_s else 0
        if self._stuck == self.STUCK_WAITS:
            warnings.warn(f"benchmarks: the GPU's clocks stayed limited through {self.STUCK_WAITS} waits of "
                          f"{limit_s} s; timing on without waiting", stacklevel=2)
        return waited


class GraphTimer:
    method = "graph"

    TRIM_BYTES = 4 << 30

    def __init__(self, device: torch.device, cfg: TimerConfig = TimerConfig()):
        self.device = torch.device(device)
        self.cfg = cfg
        self.stream = torch.cuda.Stream(self.device)
        self._reserved_mark: Optional[int] = None
        self._failed_captures: Dict[str, str] = {}
        self.clocks = ClockWatch(self.device)
        self._last_us: Optional[float] = None  # the previous timing's per-call median

    def measure(self, fns: Sequence[Fn], work: Optional[Work] = None) -> Timing:
        fns = list(fns)
        label = work.label if work is not None else ""
        torch.cuda.synchronize(self.device)
        with torch.cuda.stream(self.stream):       # lazy init (handles, workspaces) outside capture
            why = self._host_sync(fns[0]) or self._failed_captures.get(label)
            for fn in fns:
                fn()
            for _ in range(self.cfg.warmup):
                fns[0]()
        torch.cuda.synchronize(self.device)
        est = self._estimate(fns)
        calls = calls_per_graph(est, len(fns), self.cfg)
        if why:
            return self._eager(fns, calls, est, why)
        try:
            graph = self._capture(fns, calls)
        except Exception as exc:  # not capturable: time the same calls eagerly
            torch.cuda.synchronize(self.device)
            why = f"graph capture failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"
            # A failed capture strands its memory pool: never try this label again.
            self._failed_captures[label] = why
            return self._eager(fns, calls, est, why)
        try:
            if self.cfg.sustain_s > 0:
                samples, settle = self._sustained(graph.replay, calls), 0.0
                replays = len(samples)
            else:
                settle = self._settle(est)  # then one warm replay at the clocks it waited for
                graph.replay()
                torch.cuda.synchronize(self.device)
                replays = replays_for(est * calls, self.cfg)
                samples = self._timed(graph.replay, replays, calls)
        finally:
            del graph
            self._trim_pools()
        return self._done(Timing(samples, calls, replays, "graph" if self.cfg.sustain_s <= 0 else "sustained",
                                 sm_mhz=self.clocks.sm_mhz(), settle_ms=1e3 * settle))

    def _sustained(self, run_once: Fn, calls: int) -> List[float]:
        """TimerConfig.sustain_s: replays back to back for that long (the host at most 8 replays ahead, so its
        clock tracks the GPU's), the per-call times of the second half's replays (at least min_replays)."""
        events, start = [], time.monotonic()
        while time.monotonic() - start < self.cfg.sustain_s or len(events) < 2 * self.cfg.min_replays:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            run_once()
            e.record()
            events.append((s, e))
            if len(events) > 8:
                events[-9][1].synchronize()
        torch.cuda.synchronize(self.device)
        return [s.elapsed_time(e) * 1000.0 / calls for s, e in events[len(events) // 2:]]

    def _settle(self, est_us: float) -> float:
        """ClockWatch.settle, idling cfg.cool_s first where the previous timing was over 4x heavier per call."""
        heavier = self._last_us is not None and 4 * est_us < self._last_us
        return self.clocks.settle(self.cfg.settle_s, cool_s=self.cfg.cool_s if heavier else 0.0)

    def _done(self, t: Timing) -> Timing:
        self._last_us = t.median_us
        return t

    @staticmethod
    def _host_sync(fn: Fn) -> Optional[str]:
        """Why fn cannot be captured, if one call synchronizes with the host (e.g. reads a device
        tensor on the CPU); checked with PyTorch's sync debug mode before any capture is tried."""
        previous = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            fn()
        except RuntimeError as exc:
            text = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            if "synchroniz" not in text.lower():
                raise
            return f"not graph-capturable: synchronizes with the host ({text})"
        finally:
            torch.cuda.set_sync_debug_mode(previous)
        return None

    def _trim_pools(self) -> None:
        """A deleted graph's private memory pool (outputs, workspaces) is only handed back by
        empty_cache (or an out-of-memory retry): do that once several GiB have piled up."""
        reserved = torch.cuda.memory_reserved(self.device)
        if self._reserved_mark is not None and reserved - self._reserved_mark > self.TRIM_BYTES:
            torch.cuda.empty_cache()
            self._reserved_mark = torch.cuda.memory_reserved(self.device)
        else:
            self._reserved_mark = reserved if self._reserved_mark is None else min(self._reserved_mark, reserved)

    def _estimate(self, fns: List[Fn]) -> float:
        n = min(max(len(fns), 4), 32)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(n):
            fns[i % len(fns)]()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1000.0 / n

    def _capture(self, fns: List[Fn], calls: int) -> "torch.cuda.CUDAGraph":
        graph = torch.cuda.CUDAGraph()
        err: Optional[BaseException] = None
        with torch.cuda.stream(self.stream):
            graph.capture_begin()
            try:
                for i in range(calls):
                    fns[i % len(fns)]()
            except Exception as exc:
                err = exc
            try:
                graph.capture_end()
            except Exception as exc:
                err = err or exc
        if err is not None:
            raise err
        return graph

    def _timed(self, run_once: Fn, replays: int, calls: int) -> List[float]:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(replays)]
        for start, end in events:                  # enqueued back to back; one sync at the end
            start.record()
            run_once()
            end.record()
        torch.cuda.synchronize(self.device)
        return [s.elapsed_time(e) * 1000.0 / calls for s, e in events]

    def _eager(self, fns: List[Fn], calls: int, est: float, why: str) -> Timing:
        def run_once():
            for i in range(calls):
                fns[i % len(fns)]()
        if self.cfg.sustain_s > 0:  # the sustained regime eagerly: no settling either
            samples = self._sustained(run_once, calls)
            return self._done(Timing(samples, calls, len(samples), "eager", why + "; sustained",
                                     sm_mhz=self.clocks.sm_mhz()))
        replays = replays_for(est * calls, self.cfg)
        settle = self._settle(est)
        run_once()
        samples = self._timed(run_once, replays, calls)
        return self._done(Timing(samples, calls, replays, "eager", why, sm_mhz=self.clocks.sm_mhz(),
                                 settle_ms=1e3 * settle))


class FakeTimer:
    """Made-up timings: latency + bytes / bandwidth + flops / rate, a fixed factor per label and
    a few percent of noise. With several weight copies it calls the last one once, so the copy
    path runs too (the first was already run by the correctness check)."""
    method = "fake"

    def __init__(self, bandwidth: float, flop_rate: float, cfg: TimerConfig = TimerConfig(), seed: int = 0):
        self.bandwidth, self.flop_rate, self.cfg = bandwidth, flop_rate, cfg
        self.rng = np.random.default_rng(seed)

    def measure(self, fns: Sequence[Fn], work: Optional[Work] = None) -> Timing:
        fns = list(fns)
        if len(fns) > 1:
            fns[-1]()
        work = work or Work(0, 0)
        factor = 1.0 + (zlib.crc32(work.label.encode()) % 1000) / 1000.0
        byte_s = work.bytes / self.bandwidth * (0.6 if work.hot else 1.0)
        base_us = 2.5 + 1e6 * (byte_s + work.flops / self.flop_rate) * factor
        calls = calls_per_graph(base_us, len(fns), self.cfg)
        replays = replays_for(base_us * calls, self.cfg)
        samples = base_us * (1.0 + 0.02 * self.rng.standard_normal(replays))
        return Timing([float(s) for s in samples], calls, replays, "fake")


# ---- the device ----------------------------------------------------------------------------
H100_L2 = 50 * 2**20


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def device_info(device: torch.device, dry_run: bool, shrink: int = 1) -> Dict:
    """Name, slug, L2 bytes and SM count (dry run: an H100's, scaled down with the shapes)."""
    if dry_run:
        return {"name": "dry run on CPU (fake timings)", "slug": "dry-run-cpu",
                "l2_bytes": H100_L2 // (shrink * shrink), "sms": 132, "total_memory": None,
                "capability": None}
    props = torch.cuda.get_device_properties(device)
    return {"name": props.name, "slug": slug(props.name), "l2_bytes": int(props.L2_cache_size),
            "sms": int(props.multi_processor_count), "total_memory": int(props.total_memory),
            "capability": f"{props.major}.{props.minor}"}


def copy_bandwidth(timer, device: torch.device, nbytes: int) -> Dict:
    """Device-to-device copy bandwidth in GB/s, counting bytes read + written."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_(-1, 1)
    dst = torch.empty_like(src)
    t = timer.measure([lambda: dst.copy_(src)], Work(2 * nbytes, 0, "copy"))
    return {"gbps": 2 * nbytes / (t.median_us * 1e-6) / 1e9, "bytes": nbytes, "timing": t.to_json()}


def make_timer(dry_run: bool, device: torch.device, cfg: TimerConfig, shrink: int = 1):
    if dry_run:
        # An H100-like model, scaled like the shapes so the fake numbers keep their proportions.
        return FakeTimer(bandwidth=3.0e12 / shrink**2, flop_rate=6.0e14 / shrink**2, cfg=cfg)
    return GraphTimer(device, cfg)
