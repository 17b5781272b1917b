"""Joining the registry: one decorated function, or (for a future kbit op) nothing at all."""
import subprocess
import sys
import textwrap

import kbit
from benchmarks import registry, run
from benchmarks.kernels import kbit_reference
from benchmarks.registry import KBIT, Setup, register
from benchmarks.results import ResultSet

ARGS = ["--dry-run", "--shrink", "16", "--shapes", "gateup,moe_gu", "--ms", "1,4", "--ks", "4",
        "--hot-ms", "1", "--sweep-experts", "8", "--sweep-ms", "1", "--no-model", "--no-plots"]


def test_a_registered_kernel_becomes_a_column_and_wrong_results_are_marked(tmp_path):
    @register("test-wrong", family=KBIT, per_k=True, doc="returns 1.1x the right answer",
              applies=lambda case: not case.layer.moe)
    def wrong(layer, lw):
        return Setup(lw.quantized(layer.k), lambda w, inp: kbit.gemm(inp.x, w) * 1.1, kbit_reference(layer, lw))
    try:
        assert run.main(ARGS + ["--out", str(tmp_path)]) == 0
    finally:
        registry.unregister("test-wrong")
    rs = ResultSet.load(str(tmp_path / "dry-run-cpu" / "results-fast.json"))
    recs = rs.select(kernel="test-wrong")
    assert recs and all(r.status == "wrong" and r.rel_err > 0.05 for r in recs)
    md = (tmp_path / "dry-run-cpu" / "results-fast.md").read_text()
    assert "(wrong)" in md and "| test-wrong |" in md
    # a wrong kernel is never "Best"
    for line in md.splitlines():
        if line.startswith("| gateup"):
            assert "test-wrong |" not in line.split("|")[-3]


def test_future_ops_join_without_code_changes(tmp_path):
    # In a fresh process: give kbit::gemv_gemm and kbit::grouped_gemv_gemm (CUDA only) CPU
    # kernels, so their "Scalar" and "Grouped" columns run up to M = 4, and register a column for
    # a new op kbit::future_gemv whose schema is unlike grouped_gemm's (skipped with a reason).
    script = textwrap.dedent(f"""
        import torch, kbit
        lib = torch.library.Library("kbit", "FRAGMENT")
        lib.impl("gemv_gemm", lambda *a: torch.ops.kbit.gemm(*a), "CPU")
        lib.impl("grouped_gemv_gemm", lambda *a: torch.ops.kbit.grouped_gemm(*a), "CPU")
        lib.define("future_gemv(Tensor x, int k) -> Tensor")
        lib.impl("future_gemv", lambda x, k: x, "CPU")
        from benchmarks import kernels, run
        kernels._register_kbit_op("Future", "future_gemv", True, 4, "a future grouped op")
        raise SystemExit(run.main({ARGS!r} + ["--out", {str(tmp_path)!r}]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rs = ResultSet.load(str(tmp_path / "dry-run-cpu" / "results-fast.json"))
    scalar = rs.select(kernel="Scalar")
    assert scalar and all(r.status == "ok" for r in scalar)
    assert {r.m for r in scalar} == {1, 4} and all(r.experts == 0 for r in scalar)
    grouped = rs.select(kernel="Grouped")
    assert grouped and all(r.status == "ok" for r in grouped) and all(r.experts > 0 for r in grouped)
    assert any("future_gemv" in n and "own entry" in n for n in rs.notes)


def test_reference_per_dtype():
    import torch
    assert registry.reference_for(torch.float16).name == "fp16"
    assert registry.reference_for(torch.bfloat16).name == "bf16"
