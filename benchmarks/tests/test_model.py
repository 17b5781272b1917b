"""The decode-step block benchmark on the CPU."""
import torch

from benchmarks import bench_model
from benchmarks.results import ResultSet


def test_routing_counts():
    counts = bench_model.route(16, 512, 10, seed=1)
    assert len(counts) == 512 and sum(counts) == 160 and max(counts) <= 16


def test_model_dry_run(tmp_path):
    rc = bench_model.main(["--dry-run", "--shrink", "16", "--batches", "1,4", "--ks", "2", "--dtypes",
                           "fp16,bf16", "--out", str(tmp_path)])
    assert rc == 0
    rs = ResultSet.load(str(tmp_path / "dry-run-cpu" / "model-fast.json"))
    timed = [r for r in rs.records if r.timed]
    assert {r.kernel for r in timed} == {"kbit", "fp16", "bf16"}
    assert all(r.status == "ok" for r in timed)
    assert {r.m for r in timed} == {1, 4}
    md = (tmp_path / "dry-run-cpu" / "model-fast.md").read_text()
    assert "kbit vs fp16" in md and "kbit vs bf16" in md
    assert torch.tensor([r.copies for r in timed]).min() >= 1
