"""Timing rules that do not need a GPU."""
from benchmarks.harness import FakeTimer, Timing, TimerConfig, Work, calls_per_graph, replays_for, slug


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


def test_fake_timer_calls_the_last_copy():
    seen = []
    t = FakeTimer(3e12, 6e14).measure([lambda: seen.append(0), lambda: seen.append(1)], Work(10**6, 0, "x"))
    assert seen == [1] and t.method == "fake" and t.median_us > 0
    FakeTimer(3e12, 6e14).measure([lambda: seen.append(2)], Work(10**6, 0, "x"))
    assert seen == [1]


def test_slug():
    assert slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
