"""GraphTimer's control flow (warm-up, capture, eager fallbacks) against a stand-in torch.cuda.

No GPU here: a fake clock advances by each call's cost, a fake CUDAGraph records the calls made
while capturing and replays them. This checks the Python logic, not CUDA itself."""
import contextlib

import pytest
import torch

from benchmarks import harness
from benchmarks.harness import GraphTimer, TimerConfig, Work


class Clock:
    now_ms = 0.0
    capturing = None        # the FakeGraph being captured
    sync_mode = 0


class FakeEvent:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = Clock.now_ms

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


class FakeGraph:
    captures = 0

    def capture_begin(self, pool=None, capture_error_mode="global"):
        FakeGraph.captures += 1
        self.calls, Clock.capturing = [], self

    def capture_end(self):
        Clock.capturing = None
        if getattr(self, "broken", False):
            raise RuntimeError("operation failed due to a previous error during capture")

    def replay(self):
        for cost in self.calls:
            Clock.now_ms += cost


class Kernel:
    """A callable costing cost_us per call; may sync with the host, or break capture."""

    def __init__(self, cost_us, syncs=False, breaks_capture=False):
        self.cost_ms, self.syncs, self.breaks, self.eager_calls = cost_us / 1000, syncs, breaks_capture, 0

    def __call__(self):
        if self.syncs and Clock.sync_mode == "error":
            raise RuntimeError("called a synchronizing CUDA operation")
        if Clock.capturing is not None:
            if self.breaks:
                Clock.capturing.broken = True
                raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
            Clock.capturing.calls.append(self.cost_ms)
        else:
            self.eager_calls += 1
            Clock.now_ms += self.cost_ms


@pytest.fixture
def fake_cuda(monkeypatch):
    c = torch.cuda
    monkeypatch.setattr(c, "Event", FakeEvent)
    monkeypatch.setattr(c, "CUDAGraph", FakeGraph)
    monkeypatch.setattr(c, "Stream", lambda *a, **k: object())
    monkeypatch.setattr(c, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(c, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(c, "memory_reserved", lambda *a, **k: 0)
    monkeypatch.setattr(c, "empty_cache", lambda: None)
    monkeypatch.setattr(c, "get_sync_debug_mode", lambda: Clock.sync_mode)
    monkeypatch.setattr(c, "set_sync_debug_mode", lambda m: setattr(Clock, "sync_mode", m))
    FakeGraph.captures, Clock.capturing, Clock.sync_mode = 0, None, 0
    return GraphTimer(torch.device("cpu"), TimerConfig(replays=9, min_calls=32))


def test_graph_timing_of_a_short_kernel(fake_cuda):
    t = fake_cuda.measure([Kernel(5.0)], Work(0, 0, "k/dense"))
    assert t.method == "graph" and t.calls == 32 and t.replays == 9
    assert t.median_us == pytest.approx(5.0)


def test_cold_rotation_uses_every_copy(fake_cuda):
    copies = [Kernel(3.0) for _ in range(40)]
    t = fake_cuda.measure(copies, Work(0, 0, "k/dense"))
    assert t.calls == 40 and t.median_us == pytest.approx(3.0)
    assert all(k.eager_calls >= 1 for k in copies)          # every copy warmed up


def test_host_sync_is_timed_eagerly_without_a_capture(fake_cuda):
    k = Kernel(7.0, syncs=True)
    t = fake_cuda.measure([k], Work(0, 0, "k/moe"))
    assert t.method == "eager" and "synchronizes with the host" in t.note
    assert FakeGraph.captures == 0 and Clock.sync_mode == 0   # debug mode restored
    assert t.median_us == pytest.approx(7.0)


def test_failed_capture_falls_back_and_is_not_retried(fake_cuda):
    t = fake_cuda.measure([Kernel(4.0, breaks_capture=True)], Work(0, 0, "x/dense"))
    assert t.method == "eager" and "graph capture failed" in t.note and FakeGraph.captures == 1
    t2 = fake_cuda.measure([Kernel(4.0, breaks_capture=True)], Work(0, 0, "x/dense"))
    assert t2.method == "eager" and FakeGraph.captures == 1   # remembered: no second capture
    t3 = fake_cuda.measure([Kernel(4.0)], Work(0, 0, "y/dense"))
    assert t3.method == "graph" and FakeGraph.captures == 2


def test_long_kernels_use_few_calls_and_replays(fake_cuda):
    t = fake_cuda.measure([Kernel(50000.0)], Work(0, 0, "big/dense"))   # 0.1 s per graph
    assert t.calls == 2 and t.replays == harness.TimerConfig().min_replays


@pytest.fixture
def sustained(fake_cuda, monkeypatch):
    """fake_cuda in the sustained regime (0.4 s), the host clock following the fake GPU clock (on a GPU the timer
    keeps at most 8 replays queued), and neither idling nor waiting for the clocks allowed."""
    Clock.now_ms = 0.0  # (the fake clock runs on from earlier tests)
    monkeypatch.setattr(harness.time, "monotonic", lambda: Clock.now_ms / 1000)
    monkeypatch.setattr(harness.time, "sleep", lambda s: pytest.fail("the sustained regime must not idle"))
    fake_cuda.cfg = TimerConfig(replays=9, min_calls=32, sustain_s=0.4, cool_s=1.0)
    fake_cuda.clocks.limited = lambda: pytest.fail("the sustained regime must not wait for the clocks")
    return fake_cuda


def test_sustained_regime_replays_for_its_seconds_and_keeps_the_second_half(sustained, monkeypatch):
    # replays take twice as long after 120 ms (the power cap biting): most of the first half of the replays in
    # the ~0.4 s are uncapped, the whole second half capped, and the timing is the second half's
    def capped_replay(graph):
        for cost in graph.calls:
            Clock.now_ms += cost * (2 if Clock.now_ms >= 120 else 1)
    monkeypatch.setattr(FakeGraph, "replay", capped_replay)
    t = sustained.measure([Kernel(10.0)], Work(0, 0, "capped/dense"))
    assert t.method == "sustained" and t.settle_ms == 0.0 and t.calls == 32
    all_replays = 120 / (32 * 0.01) + 280 / (32 * 0.02)  # ~0.4 s of them: 375 uncapped, 438 capped
    assert t.replays == len(t.samples_us) == pytest.approx(all_replays / 2, rel=0.02)
    assert t.p10_us == pytest.approx(20.0) and t.median_us == pytest.approx(20.0)  # none of the uncapped 10 us


def test_sustained_regime_keeps_at_least_min_replays(sustained):
    sustained.cfg.sustain_s = 1e-9  # over before the first replay: still 2 x min_replays run, the second half kept
    t = sustained.measure([Kernel(10.0)], Work(0, 0, "short/dense"))
    assert t.method == "sustained" and t.replays == sustained.cfg.min_replays


def test_sustained_regime_times_an_uncapturable_call_eagerly_without_settling(sustained):
    t = sustained.measure([Kernel(7.0, syncs=True)], Work(0, 0, "k/moe"))
    assert t.method == "eager" and "sustained" in t.note and t.settle_ms == 0.0
    assert t.median_us == pytest.approx(7.0) and t.replays >= sustained.cfg.min_replays
