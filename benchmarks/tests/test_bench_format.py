"""The format-ops table of benchmarks/bench_format.py (CPU only: a fake run)."""
from benchmarks import bench_format as B


def test_markdown_marks_each_goal_met_or_missed(tmp_path):
    copy = 2400.0
    rows = [{"op": op, "k": 4, "dtype": dt, "us": 100.0, "spread": 0.01, "bytes": 1, "gbps": copy * f, "of_copy": f}
            for op, dt, f in [("quantize", "float16", 0.563), ("quantize", "bfloat16", 0.49),
                              ("repack", "-", 0.40), ("dequantize", "float16", 1.05)]]
    run = {"device": {"name": "GPU", "slug": "gpu"}, "date": "2026-11-26", "commit": "abc", "torch": "2.11",
           "N": B.N, "K": B.K, "copy_gbps": copy, "goals": B.GOALS, "rows": rows}
    path = tmp_path / "f.md"
    B.write_markdown(run, str(path))
    md = path.read_text()
    assert "| quantize | 4 | float16 | 100.0 | 1351 | 56.3 | >= 50% met |" in md
    assert "| quantize | 4 | bfloat16 | 100.0 | 1176 | 49.0 | >= 50% **missed** |" in md
    assert "| repack | 4 | - | 100.0 | 960 | 40.0 | >= 40% met |" in md
    assert "| dequantize | 4 | float16 | 100.0 | 2520 | 105.0 | >= 75% met |" in md
    assert "Copy bandwidth in the same run: 2400 GB/s" in md
