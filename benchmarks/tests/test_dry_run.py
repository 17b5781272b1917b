"""End to end on the CPU: plan -> registry -> weights -> checks -> fake timings -> JSON/Markdown/PNG."""
import json
import os

import pytest

from benchmarks import compare, run
from benchmarks.results import ResultSet

SMALL = ["--dry-run", "--shrink", "16", "--ms", "1,4", "--ks", "2,4", "--hot-ms", "1",
         "--sweep-experts", "8,16", "--sweep-ms", "1,2", "--model-batches", "1,4", "--model-ks", "4"]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    assert run.main(SMALL + ["--out", str(out), "--repeat-run"]) == 0
    folder = out / "dry-run-cpu"
    return folder, ResultSet.load(str(folder / "results-fast.json"))


def test_files_written(result):
    folder, _ = result
    assert (folder / "results-fast.md").exists()
    pngs = sorted(os.listdir(folder / "plots"))
    assert "results-fast-speedup-fp16-cold.png" in pngs and "results-fast-bandwidth-fp16-cold.png" in pngs
    assert "results-fast-moe-sweep-fp16-cold.png" in pngs
    for p in pngs:
        assert (folder / "plots" / p).read_bytes()[:4] == b"\x89PNG"


def test_json_has_everything(result):
    folder, rs = result
    data = json.loads((folder / "results-fast.json").read_text())
    assert data["schema"] == "kbit-bench/1"
    meta = data["meta"]
    for key in ("device", "torch", "copy", "plan", "kernels", "git", "elapsed_s"):
        assert key in meta
    timed = [r for r in rs.records if r.timed and r.method == "fake"]
    assert timed and all(r.samples_us and r.spread is not None and r.rel_err is not None for r in timed)
    assert all(r.status == "ok" for r in timed), [r.case_label() for r in timed if r.status != "ok"]
    kernels = {r.kernel for r in timed}
    assert {"kbit", "dq+cuBLAS", "fp16", "gmm bf16"} <= kernels
    assert {r.l2 for r in timed} == {"cold", "hot"}
    assert any(r.table == "model" for r in timed)
    assert {r.run for r in rs.records} == {1, 2}


def test_cold_copies_follow_l2(result):
    _, rs = result
    l2 = rs.meta["device"]["l2_bytes"]
    for r in rs.records:
        if r.timed and r.table == "layer" and r.method == "fake":
            if r.l2 == "hot":
                assert r.copies == 1
            else:
                assert r.copies * r.weight_bytes >= 4 * l2 or r.copies == 1


def test_markdown_tables(result):
    folder, _ = result
    md = (folder / "results-fast.md").read_text()
    assert "### M = 1 (fp16, cold L2)" in md and "### M = 4 (fp16, cold L2)" in md
    assert "### M = 1 (fp16, hot L2)" in md
    assert "**TOTAL** qwen3-coder-next k=2" in md and "**TOTAL** qwen3-coder-next k=4" in md
    assert "| shape (K x N) | k | kbit |" in md and "| Best | vs fp16 |" in md
    assert "## MoE sweep" in md and "## Decode step" in md and "## Achieved bandwidth" in md
    assert "## Timing spread" in md and "## Reproducibility" in md
    # kernels that cannot run on the CPU are named with their reason, never silently missing
    assert "Scalar: not run: torch.ops.kbit.gemv_gemm has no CPU kernel in this build" in md
    assert "Grouped: not run: torch.ops.kbit.grouped_gemv_gemm has no CPU kernel in this build" in md
    assert "int4: not run" in md


def test_repeat_pairs(result):
    _, rs = result
    rows = compare.summarize(compare.repeat_pairs(rs))
    assert rows and all(r["pairs"] > 0 for r in rows)


def test_truncation_keeps_partial_results(tmp_path):
    assert run.main(SMALL + ["--out", str(tmp_path), "--max-minutes", "0", "--no-model", "--no-plots"]) == 0
    rs = ResultSet.load(str(tmp_path / "dry-run-cpu" / "results-fast.json"))
    assert rs.meta["truncated"] is True
    assert "Truncated" in (tmp_path / "dry-run-cpu" / "results-fast.md").read_text()
