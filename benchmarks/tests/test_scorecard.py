"""benchmarks.scorecard: targets judged against records (CPU, synthetic records)."""
from benchmarks.results import Record, ResultSet
from benchmarks.scorecard import FallsWithK, Target, judge, load_anchors, render


def rec(kernel, shape, m, us, k=None, experts=0, dtype="fp16", status="ok"):
    return Record(table="layer", kernel=kernel, family="x", shape=shape, K=1, N=1, experts=experts, m=m, tokens=m,
                  k=k, dtype=dtype, l2="cold", status=status, median_us=us)


def test_ratio_targets_hold_and_miss():
    rs = ResultSet({"device": {"name": "gpu"}}, [
        rec("kbit", "llama8b_gu", 1, 10.0, k=4), rec("fp16", "llama8b_gu", 1, 31.0),
        rec("kbit", "llama70b_gu", 1, 40.0, k=4), rec("fp16", "llama70b_gu", 1, 110.0),
        rec("fp8", "llama8b_gu", 1, 20.0, dtype=None)])
    hit = judge(rs, Target(5, "w", "llama8b_gu", 0, 1, "fp16", 3.0), {("llama8b_gu", 0, 1): 42.0})
    assert hit["holds"] and hit["ratio"] == "3.10x" and hit["anchor"] == "42.00 (4.20x)"
    miss = judge(rs, Target(5, "w", "llama70b_gu", 0, 1, "fp16", 3.0), {})
    assert not miss["holds"] and miss["ratio"] == "2.75x" and miss["anchor"] == ""
    # a peer timed in its own dtype (dtype None) is found; a missing baseline gives no row
    assert judge(rs, Target(6, "w", "llama8b_gu", 0, 1, "fp8", 1.0), {})["holds"]
    assert judge(rs, Target(5, "w", "llama8b_gu", 0, 1, "int4", 1.0), {}) is None


def test_failed_timing_is_not_a_measurement():
    rs = ResultSet({}, [rec("kbit", "Q", 1, 5.0, k=4, status="wrong"), rec("fp16", "Q", 1, 9.0)])
    assert judge(rs, Target(5, "w", "Q", 0, 1, "fp16", 1.0), {}) is None


def test_time_falls_with_k():
    rows = [rec("kbit", "llama8b_gu", 1, us, k=k) for k, us in zip((2, 3, 4, 5), (8.0, 9.0, 12.0, 18.0))]
    assert judge(ResultSet({}, rows), FallsWithK(5, "w", "llama8b_gu", 1), {})["holds"]
    rows[1] = rec("kbit", "llama8b_gu", 1, 7.5, k=3)
    assert not judge(ResultSet({}, rows), FallsWithK(5, "w", "llama8b_gu", 1), {})["holds"]


def test_anchor_rows(tmp_path):
    p = tmp_path / "a.md"
    p.write_text("## Dense layers, cold L2\n| shape | M | fp16 |\n|---|---:|---:|\n| gateup (2048x5120) | 4 | 10.1 |"
                 "\n## Dense layers, hot L2\n| gateup | 4 | 6.46 |\n## MoE experts\n"
                 "| moe_dn (512x2048) | 8 | 1 | cold | 9.39 | 20.68 |\n| moe_dn (512x2048) | 8 | 1 | hot | 4.95 | 1 |\n")
    assert load_anchors(str(p)) == {("gateup", 0, 4): 10.1, ("moe_dn", 8, 1): 9.39}


def test_render_counts_misses_and_unmeasured_cells():
    rs = ResultSet({"device": {"name": "gpu"}, "git": "abc"}, [
        rec("kbit", "KV", 128, 7.0, k=4), rec("fp16", "KV", 128, 5.9),
        rec("kbit", "Q", 128, 9.0, k=4), rec("fp16", "Q", 128, 9.5)])
    text = render(rs, {})
    assert "## #7: 1 of 2 cells hold" in text and "| KV M = 128 |" in text and "| Q M = 128 |" not in text
    assert "Not in the run" in text and "llama8b_gu M = 1 (fp16)" in text


def test_another_k_is_judged_against_the_same_targets():
    from benchmarks.scorecard import targets
    four, five = targets([1, 128]), targets([1, 128], k=5)
    assert len(four) == len(five) and all(t.k == 5 for t in five if isinstance(t, Target))
    rs = ResultSet({}, [rec("kbit", "Q", 1, 4.0, k=4), rec("kbit", "Q", 1, 6.0, k=5), rec("fp16", "Q", 1, 9.0)])
    assert "| Q M = 1 | >= 2.00x fp16 | 4.00 |" in render(rs, {})
    assert "| Q M = 1 | >= 2.00x fp16 | 6.00 |" in render(rs, {}, k=5)


def test_faster_than_a_peer_is_strict():
    rs = ResultSet({}, [rec("kbit", "KV", 2, 3.0, k=4), rec("int4", "KV", 2, 3.0, dtype=None)])
    row = judge(rs, Target(5, "w", "KV", 0, 2, "int4", 1.0, strict=True), {})
    assert row["asked"] == "> 1.00x int4" and not row["holds"]


def test_merged_refuses_a_case_from_two_runs(tmp_path):
    import pytest
    from benchmarks.scorecard import merged
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    ResultSet({"git": "x"}, [rec("int4", "KV", 1, 3.0, dtype=None), rec("kbit", "KV", 1, 2.0, k=4)]).save(str(a))
    ResultSet({"git": "y"}, [rec("int4", "KV", 1, 3.1, dtype=None)]).save(str(b))
    with pytest.raises(SystemExit, match="earlier file"):
        merged([str(a), str(b)])
    ResultSet({"git": "y"}, [rec("fp16", "Q", 1, 9.0)]).save(str(b))
    rs = merged([str(a), str(b)])
    assert len(rs.records) == 3 and rs.meta["git"] == "x, y"
