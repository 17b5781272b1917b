"""benchmarks.ab_paths: op specs -> the paths it times (CPU)."""
from benchmarks.ab_paths import op_paths


def test_op_specs_with_and_without_an_argument():
    assert op_paths(["tile_gemm", "gemv_gemm:mma", "gemv_gemm:shuffle"]) == [
        ("tile_gemm", "tile_gemm"), ("gemv_gemm:mma", "gemv_gemm", "mma"), ("gemv_gemm:shuffle", "gemv_gemm", "shuffle")]
