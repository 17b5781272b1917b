"""benchmarks.bench_hf_model on the tiny config, on the CPU: the StaticCache decode step that the GPU run
captures as a CUDA graph (here run eagerly) must read no tensor value on the host and reproduce each
model's own greedy `generate` tokens."""
import json

import pytest

pytest.importorskip("transformers")

from benchmarks import bench_hf_model  # noqa: E402


def test_tiny_run_graph_decode_matches_generate(tmp_path):
    assert bench_hf_model.main(["--tiny", "--device", "cpu", "--ks", "4", "--repeats", "1",
                                "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "hf_model.json").read_text())
    rows = {r["variant"]: r for r in result["rows"]}
    assert set(rows) == {"fp16", "kbit k=4"}
    n = result["config"]["new_tokens"]
    for name, row in rows.items():
        assert "graph_error" not in row, (name, row.get("graph_error"))
        assert len(row["graph_tokens"]) == len(row["tokens"]) == n
        assert row["graph_same_tokens_as_generate"] == n, (name, row["graph_tokens"], row["tokens"])
        assert row["graph_tok_s"] > 0
    assert rows["kbit k=4"]["model_bytes"] < rows["fp16"]["model_bytes"]
    md = (tmp_path / "hf_model.md").read_text()
    assert "graph decode tok/s" in md and "kbit k=4" in md


def test_short_kernel_name():
    f = bench_hf_model.short_kernel_name
    assert f("void kbit::cuda::scalar_gemv_kernel<__half, 4, 1, true>(kbit::cuda::TcGemmArgs)") == "scalar_gemv_kernel"
    assert f("void at::native::(anonymous namespace)::reduce_kernel<512, 1>(int)") == "reduce_kernel"
    assert f("nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT") == "nvjet_sm90_tst_384x8_64x4_2x1_v_bz_TNT"
    assert f("void kbit::cuda::scalar_gemv_kernel<c10::BFloat16, 4, 1, true, (kbit::cuda::GemvDecode)2, false>(A)",
             with_arguments=True) == "scalar_gemv_kernel<BFloat16, 4, 1, true>"


def test_tiny_run_fused_projections(tmp_path):
    """--fuse-projections: a 'kbit k=4 fused' row after 'kbit k=4', its graph step reproducing its generate tokens,
    and on the CPU (each output row computed alone) the same logits, so the same tokens, as the unfused model."""
    assert bench_hf_model.main(["--tiny", "--device", "cpu", "--ks", "4", "--repeats", "1", "--fuse-projections",
                                "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "hf_model.json").read_text())
    rows = {r["variant"]: r for r in result["rows"]}
    assert list(rows) == ["fp16", "kbit k=4", "kbit k=4 fused"] and result["config"]["fuse_projections"]
    fused, plain = rows["kbit k=4 fused"], rows["kbit k=4"]
    assert "graph_error" not in fused and fused["graph_same_tokens_as_generate"] == result["config"]["new_tokens"]
    assert fused["tokens"] == plain["tokens"] and fused["logits_rel_err"] == plain["logits_rel_err"]
    assert "q/k/v (and gate/up) projections fused" in (tmp_path / "hf_model.md").read_text()


def test_tiny_run_dense_gated(tmp_path):
    """--dense --fuse-projections: every layer a dense gated MLP; rows 'fused' (q/k/v and gate/up fused, the same
    logits as unfused on the CPU) and 'fused+gated' (kbit.nn.GatedMLP: within rounding of them), each graph step
    reproducing its own generate tokens."""
    assert bench_hf_model.main(["--tiny", "--device", "cpu", "--ks", "4", "--repeats", "1", "--fuse-projections",
                                "--dense", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "hf_model.json").read_text())
    rows = {r["variant"]: r for r in result["rows"]}
    assert list(rows) == ["fp16", "kbit k=4", "kbit k=4 fused", "kbit k=4 fused+gated"] and result["config"]["dense"]
    plain, fused, gated = rows["kbit k=4"], rows["kbit k=4 fused"], rows["kbit k=4 fused+gated"]
    assert fused["logits_rel_err"] == plain["logits_rel_err"]
    # (against the fp model: the same quantization error and top-1 agreement within rounding)
    assert abs(gated["logits_rel_err"] - plain["logits_rel_err"]) < 1e-3
    assert abs(gated["top1_agreement"] - plain["top1_agreement"]) <= 0.05
    for row in (fused, gated):
        assert "graph_error" not in row and row["graph_same_tokens_as_generate"] == result["config"]["new_tokens"]
    assert "dense gated MLPs of intermediate" in (tmp_path / "hf_model.md").read_text()
