"""Timing rules that do not need a GPU."""
import pytest

from benchmarks.harness import (ClockWatch, FakeTimer, Timing, TimerConfig, Work, calls_per_graph, replays_for,
                                slug)


def test_calls_per_graph():
    cfg = TimerConfig(min_calls=32, graph_target_us=2000)
    assert calls_per_graph(3.0, 1, cfg) == 32          # short kernels: 32 back-to-back calls
    assert calls_per_graph(400.0, 1, cfg) == 5         # long ones: ~2 ms per graph
    assert calls_per_graph(9000.0, 1, cfg) == 2        # never fewer than 2
    assert calls_per_graph(3.0, 711, cfg) == 711       # every cold copy at least once
    assert calls_per_graph(3.0, 20, cfg) == 40         # whole passes over the copies
    assert calls_per_graph(400.0, 3, cfg) == 6


def test_replays_capped_by_time():
    cfg = TimerConfig(replays=15, min_replays=5, max_seconds=0.25)
    assert replays_for(100.0, cfg) == 15
    assert replays_for(100_000.0, cfg) == 5


def test_timing_statistics():
    t = Timing([10.0, 11.0, 9.0, 10.0, 30.0], calls=32, replays=5, method="graph")
    assert t.median_us == 10.0
    assert abs(t.spread - (t.p90_us - t.p10_us) / 10.0) < 1e-12
    d = t.to_json()
    assert d["median_us"] == 10.0 and "spread" in d
    assert d["sm_mhz"] is None and d["settle_ms"] == 0.0  # no NVML reading: recorded as unknown


class FakeNvml:
    """pynvml's calls that ClockWatch makes: the clocks held down by the power cap for `limited` reads."""
    NVML_CLOCK_SM = 1

    def __init__(self, limited):
        self.left = limited

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1365 if self.left else 1980

    def reasons(self, handle):
        if self.left:
            self.left -= 1
            return 0x4 | 0x1  # SW power cap (and idle, which does not count)
        return 0x1


def clock_watch(limited):
    watch = ClockWatch.__new__(ClockWatch)
    watch._nvml = FakeNvml(limited)
    watch._handle, watch._reasons, watch._stuck = "handle", watch._nvml.reasons, 0
    return watch


def test_clock_watch_idles_when_asked_even_without_nvml():
    watch = clock_watch(limited=0)
    assert watch.settle(5.0) == 0.0  # not after a heavier timing: only the limit reasons count
    assert 0.05 <= watch.settle(5.0, cool_s=0.05) < 0.5
    watch._nvml = None
    assert 0.05 <= watch.settle(5.0, cool_s=0.05) < 0.5
    assert 0.01 <= watch.settle(0.01, cool_s=1.0) < 0.04  # never past limit_s


def test_clock_watch_waits_while_the_power_cap_holds_and_no_longer_than_its_limit():
    watch = clock_watch(limited=3)
    assert watch.sm_mhz() == 1365
    waited = watch.settle(5.0)
    assert 0.01 <= waited < 1.0 and watch._nvml.left == 0 and watch.sm_mhz() == 1980
    assert clock_watch(limited=0).settle(5.0) == 0.0  # no limit: no wait at all
    watch = clock_watch(limited=10**9)
    assert 0.05 <= watch.settle(0.05) < 0.5  # a limit that never lifts: the timing goes on after limit_s
    assert 0.05 <= watch.settle(0.05) < 0.5
    with pytest.warns(UserWarning, match="stayed limited"):
        watch.settle(0.05)
    assert watch.settle(0.05) == 0.0  # three waits in a row hit the limit: no more waiting
    inert = clock_watch(0)
    inert._nvml = None  # no NVML: nothing to wait for, no clock
    assert inert.settle(5.0) == 0.0 and inert.sm_mhz() is None and not inert.limited()


def test_clock_watch_turns_itself_off_with_a_warning_when_nvml_fails():
    watch = clock_watch(limited=0)

    def broken(handle):
        raise RuntimeError("NVML went away")
    watch._reasons = broken
    with pytest.warns(UserWarning, match="NVML failed"):
        assert not watch.limited()
    assert watch.sm_mhz() is None and watch.settle(1.0) == 0.0  # inert from then on, no second warning


def test_fake_timer_calls_the_last_copy():
    seen = []
    t = FakeTimer(3e12, 6e14).measure([lambda: seen.append(0), lambda: seen.append(1)], Work(10**6, 0, "x"))
    assert seen == [1] and t.method == "fake" and t.median_us > 0
    FakeTimer(3e12, 6e14).measure([lambda: seen.append(2)], Work(10**6, 0, "x"))
    assert seen == [1]


def test_slug():
    assert slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
