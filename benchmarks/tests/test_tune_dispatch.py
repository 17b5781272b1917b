"""The crossover rule of benchmarks/tune_dispatch.py and the C++ table it writes (CPU only)."""
import json
import os

import pytest

from benchmarks import tune_dispatch as T
from benchmarks.ab_paths import timing_words


def run_of(times, ms=(1, 8, 16, 32, 64, 128), ks=(2, 4)):
    """A fake run: times[(shape, path)] = per-M list of us, the same for every k."""
    rows = []
    shapes = {"a": (4096, 1024), "b": (2048, 2048), "c": (8192, 4096), "d": (4096, 8192)}
    for shape in dict.fromkeys(s for s, _ in times):  # the fp16 yardstick, once per shape and M
        N, K = shapes[shape]
        rows += [{"shape": shape, "N": N, "K": K, "M": M, "k": None, "path": "fp16", "us": 10.0} for M in ms]
    for (shape, path), us in times.items():
        N, K = shapes[shape]
        for k in ks:
            for M, t in zip(ms, us):
                rows.append({"shape": shape, "N": N, "K": K, "M": M, "k": k, "path": path, "us": t})
    return {"ms": list(ms), "ks": list(ks), "rows": rows, "date": "2026-11-26", "commit": "abc",
            "torch": "2.11", "device": {"name": "GPU", "capability": "9.0", "sms": 132, "slug": "gpu"}}


def sized(rows):
    """The size rows of crossovers() (shape 0 x 0), ascending."""
    return [r for r in rows if not r["shape_n"]]


def test_three_way_crossovers_take_the_smallest_per_weight_size(tmp_path):
    run = run_of({
        # shape a: small kernel best to M=16, tile best to M=64, then dequantize + cuBLAS
        ("a", "kernel"): [1, 2, 3, 9, 20, 40], ("a", "tile"): [5, 5, 4, 5, 6, 30], ("a", "dequant_cublas"): [9] * 5 + [10],
        # shape b (same N*K): the small kernel loses already at M=8, the tile kernel wins to the end
        ("b", "kernel"): [1, 6, 9, 9, 20, 40], ("b", "tile"): [5, 5, 4, 5, 6, 7], ("b", "dequant_cublas"): [9] * 6,
        # shape c: no tile timings (a GPU without its shared memory): tile range empty
        ("c", "kernel"): [1, 2, 3, 20, 20, 40], ("c", "dequant_cublas"): [9] * 6,
    })
    rows = T.crossovers(run)
    # a and b share a size: the size row (the smaller crossovers), then b's and a's own rows
    assert [(r["weights"], r["shape_n"], r["shape_k"]) for r in rows] == [
        (4096 * 1024, 0, 0), (4096 * 1024, 2048, 2048), (4096 * 1024, 4096, 1024), (8192 * 4096, 0, 0)]
    ab, b, a, c = rows
    assert ab["max_kernel_m"] == {2: 1, 4: 1} and ab["max_tile_m"] == {2: 64, 4: 64}
    assert a["max_kernel_m"] == {2: 16, 4: 16} and a["max_tile_m"] == {2: 64, 4: 64}
    assert b["max_kernel_m"] == {2: 1, 4: 1} and b["max_tile_m"] == {2: 128, 4: 128}
    assert c["max_kernel_m"] == {2: 16, 4: 16} and c["max_tile_m"] == {2: 16, 4: 16}
    header = tmp_path / "t.h"
    T.write_header(run, str(header))
    found = [(r["weights"], r["shape_n"], r["shape_k"], r["max_kernel_m"], r["max_tile_m"], r["min_wgmma_m"],
              r["small_m_wpu"], r["max_gemv_m"]) for r in T.read_table(header.read_text())]
    no_wpu = [[0] * 4] * 4  # no warps-per-unit timings: the rule
    zero = [0, 0, 0, 0]
    assert found == [(4194304, 0, 0, [1, 0, 1, 0], [64, 0, 64, 0], zero, no_wpu, zero),
                     (4194304, 2048, 2048, [1, 0, 1, 0], [128, 0, 128, 0], zero, no_wpu, zero),
                     (4194304, 4096, 1024, [16, 0, 16, 0], [64, 0, 64, 0], zero, no_wpu, zero),
                     (33554432, 0, 0, [16, 0, 16, 0], [16, 0, 16, 0], zero, no_wpu, zero)]
    T.write_markdown(run, str(tmp_path / "t.md"))
    md = (tmp_path / "t.md").read_text()
    assert "| 4194304 | 1 / 64 (0) |" in md and "| 4096 x 1024 | 16 / 64 (0) |" in md
    assert "| 16 | 10.0 | 3.0 | 4.0 | - | 9.0 | 3.33x |" in md


def test_tiled_range_ends_at_the_least_worst_loss():
    # a near-tie lost at 32 no longer ends the tile kernels' range before a clear win at 64 (session 42: Qwen3 Q at
    # M = 768 / 1024); past it the fallback wins by far, so the range ends at 64
    ms = [1, 8, 16, 32, 64, 128]
    tiled = {1: 5.0, 8: 5.0, 16: 6.0, 32: 10.2, 64: 11.0, 128: 40.0}
    fallback = {1: 20.0, 8: 20.0, 16: 20.0, 32: 10.0, 64: 13.0, 128: 20.0}
    assert T.tiled_range_end(ms, 1, tiled, fallback) == 64  # worst loss 2% (M = 32), against 18% ending at 16
    # monotonic: the last M the tile kernels win (no loss); never: small; always: the top of the grid
    assert T.tiled_range_end(ms, 1, tiled, {**fallback, 32: 11.0, 64: 10.0}) == 32
    assert T.tiled_range_end(ms, 8, tiled, {m: 1.0 for m in ms}) == 8
    assert T.tiled_range_end(ms, 1, tiled, {m: 100.0 for m in ms}) == 128
    # the tile kernels not timed past 32 (inf): the range cannot reach past it
    assert T.tiled_range_end(ms, 1, {**tiled, 64: float("inf"), 128: float("inf")}, {m: 100.0 for m in ms}) == 32
    # equal worst losses (10%): the smaller total loss (ending at 8 or 32: one loss; at 1 or 16: two), then the
    # larger M
    tied = [1, 8, 16, 32]
    assert T.tiled_range_end(tied, 1, {8: 10.0, 16: 11.0, 32: 10.0}, {8: 11.0, 16: 10.0, 32: 11.0}) == 32


def test_wgmma_start_is_where_it_keeps_beating_the_tile_kernel():
    run = run_of({
        # shape a: wgmma loses at 8-16, wins from 32 on; it also extends the tiled range past tile's
        ("a", "kernel"): [1, 9, 9, 20, 20, 40], ("a", "tile"): [5, 4, 4, 6, 8, 12],
        ("a", "wgmma"): [6, 5, 5, 5, 6, 9], ("a", "dequant_cublas"): [10] * 6,
        # shape b (same N*K): wgmma wins from 64 only -> the row starts it at 64
        ("b", "kernel"): [1, 9, 9, 20, 20, 40], ("b", "tile"): [5, 4, 4, 5, 8, 12],
        ("b", "wgmma"): [6, 5, 5, 6, 6, 9], ("b", "dequant_cublas"): [10] * 6,
        # shape c: wgmma never wins at the top of the range -> never
        ("c", "kernel"): [1, 9, 9, 20, 20, 40], ("c", "tile"): [5, 4, 4, 5, 6, 7],
        ("c", "wgmma"): [6, 3, 3, 3, 6, 8], ("c", "dequant_cublas"): [10] * 6,
    })
    ab, c = sized(T.crossovers(run))
    assert ab["max_kernel_m"] == {2: 1, 4: 1} and ab["max_tile_m"] == {2: 128, 4: 128}
    assert ab["min_wgmma_m"] == {2: 64, 4: 64}
    assert c["min_wgmma_m"] == {2: 0, 4: 0}


def test_wgmma_start_counts_the_small_m_kernels_last_m():
    # the small-M kernel wins up to 16; wgmma beats tile at 16 and above -> wgmma from 16, so M = 17..31
    # (between the grid points) goes to wgmma, not tile; where wgmma loses at 16 it starts at 32
    run = run_of({
        ("a", "kernel"): [1, 2, 3, 20, 20, 40], ("a", "tile"): [5, 4, 6, 6, 8, 12],
        ("a", "wgmma"): [6, 5, 5, 5, 6, 9], ("a", "dequant_cublas"): [10] * 6,
        ("c", "kernel"): [1, 2, 3, 20, 20, 40], ("c", "tile"): [5, 4, 4, 6, 8, 12],
        ("c", "wgmma"): [6, 5, 5, 5, 6, 9], ("c", "dequant_cublas"): [10] * 6,
    })
    a, c = sized(T.crossovers(run))
    assert a["max_kernel_m"] == {2: 16, 4: 16} and c["max_kernel_m"] == {2: 16, 4: 16}
    assert a["min_wgmma_m"] == {2: 16, 4: 16}
    assert c["min_wgmma_m"] == {2: 32, 4: 32}


def test_warps_per_unit_least_worst_loss_per_size_and_its_time_is_the_kernels(tmp_path):
    ms = (1, 4, 8, 16, 32)
    times = {("a", "tile"): [50] * 5, ("a", "dequant_cublas"): [60] * 5,
             ("b", "tile"): [50] * 5, ("b", "dequant_cublas"): [60] * 5,
             ("a", "kernel"): [0, 0, 0, 0, 40], ("b", "kernel"): [0, 0, 0, 0, 40]}  # rule: M = 32 only
    # per M = 1, 4, 8, 16: shape a (4096 x 1024) and b (2048 x 2048), same N*K
    times[("a", "kernel/w8")] = [10, 10, 10, 10, 0]
    times[("a", "kernel/w4")] = [9, 10, 12, 100, 0]
    times[("a", "kernel/w2")] = [30, 8, 12, 100, 0]
    times[("b", "kernel/w8")] = [10, 10, 10, 60, 0]
    times[("b", "kernel/w4")] = [9, 10.05, 8, 100, 0]
    times[("b", "kernel/w2")] = [30, 30, 8, 55, 0]
    run = run_of(times, ms=ms, ks=(4,))
    run["rows"] = [r for r in run["rows"] if r["us"] != 0]  # what runs_path leaves unmeasured
    # M=1: w4 best on both; M=4: w8 and w4 tie within 1% -> w8 (w2 loses 3x on b); M=8: w8 loses
    # 25% on b, w4 20% on a, w2 20% on a -> w4 (the earlier); M=16: w8 loses 9% on b, w2 10x on a
    assert T.chosen_wpu(run) == {(4096 * 1024, 4, 1): 4, (4096 * 1024, 4, 4): 8, (4096 * 1024, 4, 8): 4,
                                 (4096 * 1024, 4, 16): 8}
    t = T.timings(run)
    assert [t[("b", M, 4, "kernel")] for M in ms] == [9, 10, 8, 60, 40]
    row, b, a = T.crossovers(run)
    assert row["small_m_wpu"] == {4: [4, 8, 4, 8]} and row["max_kernel_m"] == {4: 8}  # b: 60 us > tile at M=16
    # each shape's own row: its own best warps per unit (ties within 1% to more warps)
    assert a["small_m_wpu"] == {4: [4, 2, 8, 8]} and b["small_m_wpu"] == {4: [4, 8, 4, 2]}
    T.write_header(run, str(tmp_path / "t.h"))
    assert ("{0, 0, 0, 0}, {0, 0, 0, 0}, {4, 8, 4, 8}, {0, 0, 0, 0}}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}"
            in (tmp_path / "t.h").read_text())


def test_warps_per_unit_sweep_only_at_buckets_and_within_k_groups():
    no_wgmma = lambda k, M: False  # noqa: E731
    assert T.runs_path("kernel/w8", 4, 8, 2048, no_wgmma) and not T.runs_path("kernel/w8", 4, 8, 1024, no_wgmma)
    assert T.runs_path("kernel/w4", 4, 16, 1024, no_wgmma) and not T.runs_path("kernel/w4", 4, 24, 4096, no_wgmma)
    assert T.runs_path("kernel", 4, 24, 4096, no_wgmma) and not T.runs_path("kernel", 4, 16, 4096, no_wgmma)
    # between bucket points (M = 2) every value is timed too: no timing comes from the table being tuned
    assert T.runs_path("kernel/w4", 4, 2, 2048, no_wgmma) and not T.runs_path("kernel", 4, 2, 2048, no_wgmma)
    assert [T.bucket_of(M) for M in (1, 2, 4, 5, 9, 16)] == [1, 4, 4, 8, 16, 16]
    assert T.wpu_cap(32) == 1 and T.wpu_cap(512) == 2 and T.wpu_cap(1792) == 4 and T.wpu_cap(5120) == 8


def test_scalar_gemv_first_while_it_beats_every_path():
    ms = (1, 2, 4, 8)
    run = run_of({
        # a: gemv best at M = 1 and 2, not at 4 -> 2; b (same size): best at 1 only -> the row takes 1
        # (M = 8: gemv fastest again by 7%, after losing 50% at 4: the range ends before the larger loss)
        ("a", "gemv"): [3, 4, 9, 6.5], ("a", "kernel"): [5, 5, 6, 7], ("a", "dequant_cublas"): [20] * 4,
        ("b", "gemv"): [3, 9, 9, 6.5], ("b", "kernel"): [5, 5, 6, 7], ("b", "dequant_cublas"): [20] * 4,
        # c: gemv never best (ties go to the kernel) -> 0
        ("c", "gemv"): [5, 9, 9, 9], ("c", "kernel"): [5, 5, 6, 7], ("c", "dequant_cublas"): [20] * 4,
    }, ms=ms, ks=(4,))
    ab, c = sized(T.crossovers(run))
    assert ab["max_gemv_m"] == {4: 1} and c["max_gemv_m"] == {4: 0}
    assert ab["max_kernel_m"] == {4: 8}
    top = T.GEMV_MAX_ROWS  # kGemvMaxRows (tests/test_opcheck.py checks it against scalar_gemv.h): timed up to it
    assert T.runs_path("gemv", 4, top, 2048, lambda k, M: False) and not T.runs_path("gemv", 4, top + 1, 2048, lambda k, M: False)


def test_gemv_range_by_the_least_worst_loss():
    ms = (1, 2, 4)
    run = run_of({
        # a: 1% behind the kernel at M = 1, fastest at 2 -> 2 (session 67: Qwen2.5-7B's lm_head at k = 5)
        ("a", "gemv"): [5.05, 4, 9], ("a", "kernel"): [5, 5, 5], ("a", "dequant_cublas"): [20] * 3,
        # b: 4% behind at M = 1, 20% ahead at 2 -> 2 (session 69: the same lm_head, 2.6% behind wgmma at 1, 8-11%
        # ahead at 2-4; session 68's 2% tie sent 2-8 to wgmma)
        ("b", "gemv"): [5.2, 4, 9], ("b", "kernel"): [5, 5, 5], ("b", "dequant_cublas"): [20] * 3,
        # c: fastest at 1, tied within 1% at 2 and 4 -> 1 (no win past 1 to take a loss for)
        ("c", "gemv"): [4, 5.05, 5.05], ("c", "kernel"): [5, 5, 5], ("c", "dequant_cublas"): [20] * 3,
        # d: 30% behind at M = 1, the kernel 25% behind it at 2 -> 0 (the larger loss would be the GEMV's at 1)
        ("d", "gemv"): [6.5, 4, 9], ("d", "kernel"): [5, 5, 5], ("d", "dequant_cublas"): [20] * 3,
    }, ms=ms, ks=(4,))
    rows = {}
    for name in "abcd":
        (rows[name],) = T.size_rows({**run, "rows": [r for r in run["rows"] if r["shape"] == name]})
    assert {name: r["max_gemv_m"][4] for name, r in rows.items()} == {"a": 2, "b": 2, "c": 1, "d": 0}
    assert rows["a"]["max_kernel_m"] == {4: 4}
    # a and b share a size (so do c and d): the row takes the least end
    got = {r["weights"]: r["max_gemv_m"][4] for r in sized(T.crossovers(run))}
    assert got == {4096 * 1024: 2, 8192 * 4096: 0}
    # the rule itself: a tie (M = 2) does not extend the range; a GEMV that never wins gets none; nothing timed, none
    assert T.gemv_range_end([1, 2], {1: 4.0, 2: 5.0}, {1: 5.0, 2: 5.0}) == 1
    assert T.gemv_range_end([1, 2], {1: 6.0, 2: 6.0}, {1: 5.0, 2: 5.0}) == 0
    assert T.gemv_range_end([], {}, {}) == 0
    # a loss inside the range where a later win is larger: 10% behind at 2, 20% ahead at 4 -> 4
    assert T.gemv_range_end([1, 2, 4], {1: 4.0, 2: 5.5, 4: 5.0}, {1: 5.0, 2: 5.0, 4: 6.0}) == 4


def test_between_buckets_the_kernel_time_is_at_the_buckets_choice_and_gemv_owns_its_range():
    ms = (1, 2, 4)
    run = run_of({
        ("a", "gemv"): [1, 9, 9], ("a", "tile"): [2, 4, 4], ("a", "dequant_cublas"): [20] * 3,
        ("a", "kernel/w8"): [5, 5, 3], ("a", "kernel/w4"): [5, 3.5, 2],
    }, ms=ms, ks=(4,))
    # bucket M <= 4 picks 4 warps (2 vs 3 us at M = 4): M = 2 takes its 4-warp time, 3.5 us
    assert T.chosen_wpu(run)[(4096 * 1024, 4, 4)] == 4
    assert T.timings(run)[("a", 2, 4, "kernel")] == 3.5
    # the kernel loses to tile at M = 1 (5 vs 2 us), but the GEMV owns M = 1, so the kernel's range is
    # judged from M = 2 on, where it wins (3.5 and 2 us vs tile's 4)
    (row,) = T.crossovers(run)
    assert row["max_gemv_m"] == {4: 1} and row["max_kernel_m"] == {4: 4}


def test_committed_tables_all_parse():
    # the generated C++ header (csrc/cuda/gemm/tc_dispatch_table.h) in the format header_text writes:
    # read_tables (which the GPU dispatch tests use too) reads every table and row, nothing is skipped silently
    tables = T.read_tables(open(T.HEADER).read())
    assert [tb["device"] for tb in tables][:2] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert len({tb["device"] for tb in tables}) == len(tables)
    for tb in tables:
        rows = tb["rows"]
        assert len(sized(rows)) >= 2 and tb["sms"] > 0 and "commit" in tb["note"]
        keys = [(r["weights"], r["shape_n"], r["shape_k"]) for r in rows]
        assert keys == sorted(keys)
        for r in rows:
            assert r["shape_n"] * r["shape_k"] in (0, r["weights"])
            assert {v for b in r["small_m_wpu"] for v in b} <= {0, 1, 2, 4, 8}
            assert all(0 <= v <= T.GEMV_MAX_ROWS for v in r["max_gemv_m"])
    with pytest.raises(ValueError, match="does not parse"):
        T.read_table("    {1048576, 0, 0, {16, 16}},\n")


def test_a_new_gpus_table_is_merged_with_the_others(tmp_path):
    # tune_dispatch on a second GPU keeps the first GPU's table and adds its own; on the first GPU
    # again it replaces that GPU's table in place
    def run_on(name, small):
        run = run_of({("a", "kernel"): [1, 2, 3, 9, 20, 40], ("a", "tile"): [5, 5, 4, 5, 6, 30],
                      ("a", "dequant_cublas"): [9] * 5 + [10]}, ks=(4,))
        run["device"] = {**run["device"], "name": name}
        if small:  # the small-M kernel wins to M = 32 here
            for r in run["rows"]:
                if r["path"] == "kernel" and r["M"] == 32:
                    r["us"] = 1
        return run
    first, second, merged = (tmp_path / n for n in ("1.h", "2.h", "3.h"))
    T.write_header(run_on("GPU A", False), str(first))
    T.write_header(run_on("GPU B", True), str(second), merge_with=str(first))
    tables = T.read_tables(second.read_text())
    assert [tb["device"] for tb in tables] == ["GPU A", "GPU B"]
    assert [tb["rows"][0]["max_kernel_m"][2] for tb in tables] == [16, 32]
    assert 'kTcRows1, 1},' in second.read_text() and "kNumTcCrossoverTables = 2;" in second.read_text()
    T.write_header(run_on("GPU A", True), str(merged), merge_with=str(second))
    tables = T.read_tables(merged.read_text())
    assert [(tb["device"], tb["rows"][0]["max_kernel_m"][2]) for tb in tables] == [("GPU A", 32), ("GPU B", 32)]
    with pytest.raises(ValueError, match="in order"):
        T.read_tables(merged.read_text().replace("kTcRows1, 1},", "kTcRows0, 1},"))
    with pytest.raises(ValueError, match="provenance"):
        T.read_tables(merged.read_text().replace("// GPU B (132 SMs", "// GPU B (132 cores"))
    with pytest.raises(FileNotFoundError):  # a mistyped header to merge with: not silently the new table alone
        T.write_header(run_on("GPU C", False), str(tmp_path / "4.h"), merge_with=str(tmp_path / "missing.h"))


def test_a_run_over_fewer_k_or_shapes_writes_no_header(tmp_path, capsys):
    # its table would send the k and sizes it did not time to dequantize + cuBLAS (zeros) on this GPU
    run = run_of({("a", "kernel"): [1, 2, 3, 9, 20, 40], ("a", "dequant_cublas"): [9] * 6}, ks=(4,))
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    T.main(["--from-json", str(path), "--out", str(tmp_path / "out"), "--merge-with", ""])
    assert not (tmp_path / "out" / "tc_dispatch_table.h").exists()
    assert "no tc_dispatch_table.h written" in capsys.readouterr().out
    assert (tmp_path / "out" / "dispatch-gpu.md").exists()


def test_above_128_only_wgmma_and_dequantize_cublas_are_timed_and_the_range_runs_to_the_grids_top(tmp_path):
    wgmma = lambda k, M: True  # noqa: E731
    top = T.SMALL_KERNELS_MAX_M
    assert T.runs_path("kernel", 4, top, 2048, wgmma) and not T.runs_path("kernel", 4, top + 64, 2048, wgmma)
    assert T.runs_path("tile", 4, top, 2048, wgmma) and not T.runs_path("tile", 4, top + 64, 2048, wgmma)
    assert T.runs_path("tile", 4, top + 64, 2048, lambda k, M: False)  # no wgmma: the tile kernel all the way
    assert T.runs_path("wgmma", 4, 1024, 2048, wgmma) and T.runs_path("dequant_cublas", 4, 1024, 2048, wgmma)
    assert T.MS[-1] == 4096 and top in T.MS  # session 38: the grid goes on past 1024
    ms = (1, 64, 128, 256, 512, 1024)
    run = run_of({
        # a: wgmma beats dequantize + cuBLAS up to 512 -> the tiled range ends there
        ("a", "kernel"): [1, 20, 40, 0, 0, 0], ("a", "tile"): [5, 9, 12, 0, 0, 0],
        ("a", "wgmma"): [6, 5, 9, 15, 30, 70], ("a", "dequant_cublas"): [20, 20, 20, 25, 35, 60],
        # c: wgmma wins everywhere from 64 -> its range runs to the grid's top
        ("c", "kernel"): [1, 20, 40, 0, 0, 0], ("c", "tile"): [5, 9, 12, 0, 0, 0],
        ("c", "wgmma"): [6, 5, 9, 15, 30, 50], ("c", "dequant_cublas"): [20, 20, 20, 25, 35, 60],
    }, ms=ms, ks=(4,))
    run["rows"] = [r for r in run["rows"] if r["us"] != 0]  # what runs_path leaves unmeasured
    a, c = sized(T.crossovers(run))
    assert a["max_kernel_m"] == {4: 1} and a["max_tile_m"] == {4: 512} and a["min_wgmma_m"] == {4: 64}
    assert c["max_tile_m"] == {4: 1024} and c["min_wgmma_m"] == {4: 64}
    T.write_markdown(run, str(tmp_path / "t.md"))
    assert "| 1024 | 10.0 | - | - | 70.0 | 60.0 | 0.17x |" in (tmp_path / "t.md").read_text()


def test_small_kernels_top_m_matches_the_dispatchers():
    # tc_dispatch.cpp reads a table's tiled range past kTileTimedMaxM as wgmma's (the tile kernel was not
    # timed there): the two constants must agree
    import re
    header = os.path.join(os.path.dirname(__file__), "..", "..", "csrc", "cuda", "gemm", "tc_dispatch.h")
    with open(header) as f:
        (value,) = re.findall(r"kTileTimedMaxM = (\d+);", f.read())
    assert int(value) == T.SMALL_KERNELS_MAX_M


def test_merge_runs_later_rows_win_and_the_grid_is_the_union(tmp_path):
    # a full run to M = 128, then a run of the large M only (M = 64, 128, 256) whose tile kernel beats
    # dequantize + cuBLAS up to 256: the merged table takes the second run's timings at 64 and 128
    base = run_of({("a", "kernel"): [1, 2, 3, 9, 20, 40], ("a", "tile"): [5, 5, 4, 5, 6, 30],
                   ("a", "dequant_cublas"): [9] * 5 + [10]})
    large = run_of({("a", "tile"): [6, 7, 8], ("a", "dequant_cublas"): [9, 9, 9]}, ms=(64, 128, 256))
    large["commit"] = "def"
    merged = T.merge_runs([base, large])
    assert merged["ms"] == [1, 8, 16, 32, 64, 128, 256]
    assert merged["commit"] == "abc (M 1, 8, 16, 32, 64, 128) + def (M 64, 128, 256)"
    t = {(r["shape"], r["M"], r["k"], r["path"]): r["us"] for r in merged["rows"]}
    assert t[("a", 128, 4, "tile")] == 7 and t[("a", 32, 4, "tile")] == 5 and t[("a", 256, 2, "tile")] == 8
    assert len(t) == len(merged["rows"])  # one row per (shape, M, k, path)
    assert T.crossovers(base)[0]["max_tile_m"] == {2: 64, 4: 64}
    assert T.crossovers(merged)[0]["max_tile_m"] == {2: 256, 4: 256}
    # runs of one commit over the same M, shapes apart, are named once
    assert T.merge_runs([large, large])["commit"] == "def (M 64, 128, 256)"
    # the CLI writes the merged run's JSON, markdown and (full k and shapes only) says why no header
    for name, r in (("base.json", base), ("large.json", large)):
        (tmp_path / name).write_text(json.dumps(r))
    T.main(["--merge-runs", f"{tmp_path / 'base.json'},{tmp_path / 'large.json'}", "--out", str(tmp_path / "out")])
    assert json.loads((tmp_path / "out" / "dispatch-gpu.json").read_text())["ms"] == merged["ms"]
    assert (tmp_path / "out" / "dispatch-gpu.md").exists()


def test_merge_runs_names_a_sustained_run():
    base = run_of({("a", "tile"): [5] * 6, ("a", "dequant_cublas"): [9] * 6})
    large = run_of({("a", "tile"): [6, 7, 8], ("a", "dequant_cublas"): [9, 9, 9]}, ms=(64, 128, 256))
    large["commit"], large["sustain_s"] = "def", 0.3
    merged = T.merge_runs([base, large])
    assert merged["commit"] == "abc (M 1, 8, 16, 32, 64, 128) + def (M 64, 128, 256; sustained 0.3 s)"
    # the merged run is not all sustained: its regime is None (the note tells the runs apart), and so its Markdown says
    assert merged["sustain_s"] is None and "settled or sustained by run" in timing_words(merged)
    assert T.merge_runs([large, large])["sustain_s"] == 0.3 and "0.3 s of back-to-back" in timing_words(large)
    assert T.merge_runs([base, base])["sustain_s"] == 0.0 and timing_words(base) == "CUDA-graph medians"


def test_merge_runs_refuses_runs_of_different_gpus_or_k():
    a = run_of({("a", "tile"): [5] * 6})
    b = run_of({("a", "tile"): [5] * 6})
    b["device"] = {**b["device"], "name": "Other GPU"}
    with pytest.raises(SystemExit, match="different GPUs"):
        T.merge_runs([a, b])
    c = run_of({("a", "tile"): [5] * 6}, ks=(4,))
    with pytest.raises(SystemExit, match="different k"):
        T.merge_runs([a, c])
    # a shape only some runs timed, at part of the merged grid: refused (its crossovers would read missing timings)
    base = run_of({("a", "dequant_cublas"): [9] * 6, ("b", "dequant_cublas"): [9] * 6})
    large = run_of({("a", "dequant_cublas"): [9] * 3}, ms=(64, 128, 256))
    with pytest.raises(SystemExit, match=r"not timed at every M .*\('b', 256, 2\)"):
        T.merge_runs([base, large])


def bf16_run_of(times, ms=(256, 512, 1024), ks=(2, 4)):
    """A fake bf16 run (measure_bf16): run_of's rows with cuBLAS bf16 as the yardstick."""
    run = run_of(times, ms=ms, ks=ks)
    for r in run["rows"]:
        if r["path"] == "fp16":
            r["path"] = "bf16"
    return {**run, "dtype": "bfloat16", "commit": "bf1"}


def wgmma_run_of(wgmma):
    """A fake fp16 run over M = 1, 64, 128, 256, 512, 1024: per shape of `wgmma` ({shape: us per M}) the small-M kernel
    (timed to 128, best at M = 1), that wgmma, and dequantize + cuBLAS; untimed cells left out as runs_path does."""
    times = {}
    for shape, us in wgmma.items():
        times.update({(shape, "kernel"): [1, 20, 40, 0, 0, 0], (shape, "wgmma"): us,
                      (shape, "dequant_cublas"): [20, 20, 20, 25, 35, 60]})
    run = run_of(times, ms=(1, 64, 128, 256, 512, 1024))
    run["rows"] = [r for r in run["rows"] if r["us"] != 0]
    return run


def test_bf16_column_ends_the_tiled_range_by_the_bf16_timings(tmp_path):
    # fp16: wgmma beats dequantize + cuBLAS to the grid's top (1024) on a and b (one size), and c's tiled range ends
    # at 64 (below the bf16 sweep's grid). bf16: a's wgmma loses from 512, b's from 1024; c not timed in bf16.
    run = wgmma_run_of({"a": [6, 5, 9, 15, 30, 50], "b": [6, 5, 9, 15, 30, 50], "c": [6, 5, 30, 30, 60, 90]})
    bf16 = bf16_run_of({("a", "wgmma"): [20, 40, 80], ("a", "dequant_cublas"): [25, 35, 60],
                        ("b", "wgmma"): [20, 30, 80], ("b", "dequant_cublas"): [25, 35, 60]})
    ends = T.bf16_range_ends(run, bf16)
    assert ends == {"a": {2: 256, 4: 256}, "b": {2: 512, 4: 512}}
    rows = T.crossovers(run, bf16)
    size_ab, b, a, c = rows
    assert size_ab["max_tile_m"] == {2: 1024, 4: 1024} and size_ab["max_tile_m_bf16"] == {2: 256, 4: 256}
    assert a["max_tile_m_bf16"] == {2: 256, 4: 256} and b["max_tile_m_bf16"] == {2: 512, 4: 512}
    assert c["max_tile_m"] == {2: 64, 4: 64} and c["max_tile_m_bf16"] == {}  # not timed in bf16: 0, fp16's end
    assert all(r["max_tile_m_bf16"] == {} for r in T.crossovers(run))
    header = tmp_path / "t.h"
    T.write_header(run, str(header), bf16_run=bf16)
    (table,) = T.read_tables(header.read_text())
    assert [r["max_tile_m_bf16"] for r in table["rows"]] == [[256, 0, 256, 0], [512, 0, 512, 0], [256, 0, 256, 0],
                                                             [0, 0, 0, 0]]
    assert "bf16: commit bf1; M grid [256, 512, 1024]." in table["note"]
    T.write_markdown(run, str(tmp_path / "t.md"), bf16)
    md = (tmp_path / "t.md").read_text()
    assert "| 4194304 | 1 / 1024 (1); bf16 to 256 | - / - (-) | 1 / 1024 (1); bf16 to 256 | - / - (-) |" in md
    assert "| 512 | 10.0 | 40.0 / 35.0 | 40.0 / 35.0 |" in md
    # a row written before the bf16 columns (session 42's headers) reads as not measured, and one with the tiled
    # range's bf16 column only (sessions 43-71) has its GEMV's not measured
    (old,) = T.read_table("    {1048576, 0, 0, {128, 128, 128, 128}, {4096, 4096, 4096, 2048}, {128, 128, 128, 128}, "
                          "{{8, 8, 8, 8}, {8, 8, 8, 8}, {8, 8, 8, 8}, {8, 8, 8, 8}}, {128, 128, 128, 128}},\n")
    assert old["max_tile_m_bf16"] == [0, 0, 0, 0] and old["max_tile_m"] == [4096, 4096, 4096, 2048]
    assert old["max_gemv_m_bf16"] == [0, 0, 0, 0]
    (mid,) = T.read_table("    {1048576, 0, 0, {128, 128, 128, 128}, {4096, 4096, 4096, 2048}, {128, 128, 128, 128}, "
                          "{{8, 8, 8, 8}, {8, 8, 8, 8}, {8, 8, 8, 8}, {8, 8, 8, 8}}, {128, 128, 128, 128}, "
                          "{1024, 1024, 768, 512}},\n")
    assert mid["max_tile_m_bf16"] == [1024, 1024, 768, 512] and mid["max_gemv_m_bf16"] == [0, 0, 0, 0]


def test_bf16_gemv_column_extends_the_gemvs_range_by_the_bf16_timings(tmp_path):
    # fp16: the GEMV to 8 on a, to 16 on b (a's size), to 32 on c. bf16 (grid 12-48): a's GEMV wins to 24; b's loses
    # at 24, the first M above its fp16 end (16 stays); c's loses everywhere, also below its fp16 end (32 stays: the
    # bf16 end is never below fp16's); d (c's size) not timed with the GEMV in bf16: its fp16 end (1), so c and d's
    # size row keeps 1.
    wg = [5, 5, 4, 5, 6, 7]
    run = run_of({("a", "gemv"): [1, 2, 9, 99, 99, 99], ("a", "wgmma"): wg, ("a", "dequant_cublas"): [20] * 6,
                  ("b", "gemv"): [1, 2, 3, 9, 99, 99], ("b", "wgmma"): wg, ("b", "dequant_cublas"): [20] * 6,
                  ("c", "gemv"): [1, 2, 3, 4, 99, 99], ("c", "wgmma"): wg, ("c", "dequant_cublas"): [20] * 6,
                  ("d", "gemv"): [1, 9, 9, 9, 99, 99], ("d", "wgmma"): wg, ("d", "dequant_cublas"): [20] * 6})
    bf16 = bf16_run_of({("a", "gemv"): [3, 3.5, 4, 9, 99], ("a", "wgmma"): [5] * 5, ("a", "dequant_cublas"): [20] * 5,
                        ("b", "gemv"): [3, 3.5, 6, 9, 99], ("b", "wgmma"): [5] * 5, ("b", "dequant_cublas"): [20] * 5,
                        ("c", "gemv"): [9, 9, 9, 9, 99], ("c", "wgmma"): [5] * 5, ("c", "dequant_cublas"): [20] * 5,
                        ("d", "wgmma"): [5] * 5, ("d", "dequant_cublas"): [20] * 5}, ms=(12, 16, 24, 32, 48))
    assert T.bf16_gemv_ends(run, bf16) == {"a": {2: 24, 4: 24}, "b": {2: 16, 4: 16}, "c": {2: 32, 4: 32},
                                           "d": {2: 1, 4: 1}}
    rows = {(r["weights"], r["shape_n"]): r for r in T.crossovers(run, bf16)}
    size_ab, a, b = rows[(4194304, 0)], rows[(4194304, 4096)], rows[(4194304, 2048)]
    assert size_ab["max_gemv_m"] == {2: 8, 4: 8} and size_ab["max_gemv_m_bf16"] == {2: 16, 4: 16}  # the least
    assert a["max_gemv_m"] == {2: 8, 4: 8} and a["max_gemv_m_bf16"] == {2: 24, 4: 24}
    assert b["max_gemv_m"] == {2: 16, 4: 16} and b["max_gemv_m_bf16"] == {2: 16, 4: 16}
    size_cd, c, d = rows[(8192 * 4096, 0)], rows[(8192 * 4096, 8192)], rows[(8192 * 4096, 4096)]
    assert size_cd["max_gemv_m"] == {2: 1, 4: 1} and size_cd["max_gemv_m_bf16"] == {2: 1, 4: 1}
    assert c["max_gemv_m_bf16"] == {2: 32, 4: 32} and d["max_gemv_m_bf16"] == {2: 1, 4: 1}
    # a bf16 run without the GEMV (the large-M sweeps): no column
    assert T.bf16_gemv_ends(run, bf16_run_of({("a", "wgmma"): [5] * 3, ("a", "dequant_cublas"): [9] * 3})) == {}
    header = tmp_path / "t.h"
    T.write_header(run, str(header), bf16_run=bf16)
    (table,) = T.read_tables(header.read_text())
    assert [r["max_gemv_m_bf16"] for r in table["rows"]][:3] == [[16, 0, 16, 0], [16, 0, 16, 0], [24, 0, 24, 0]]
    T.write_markdown(run, str(tmp_path / "t.md"), bf16)
    md = (tmp_path / "t.md").read_text()
    assert "| 2048 x 2048 | gemv 16; 16 / 128 (16); bf16 to 128; bf16 gemv 16 |" in md
    assert "| 24 | 10.0 | 5.0 / 20.0 / 4.0 | 5.0 / 20.0 / 4.0 |" in md  # a's bf16 timings: tiled / fallback / GEMV


def test_bf16_sweep_and_runs_cli_refuse_what_they_cannot_use(tmp_path):
    # --bf16-runs takes bf16 runs of the fp16 run's GPU only
    fp16 = run_of({("a", "tile"): [5] * 6, ("a", "dequant_cublas"): [9] * 6})
    (tmp_path / "fp16.json").write_text(json.dumps(fp16))
    with pytest.raises(SystemExit, match="runs of --dtype bfloat16 only"):
        T.main(["--from-json", str(tmp_path / "fp16.json"), "--bf16-runs", str(tmp_path / "fp16.json"),
                "--out", str(tmp_path / "out"), "--merge-with", ""])
    other = bf16_run_of({("a", "wgmma"): [5] * 3, ("a", "dequant_cublas"): [9] * 3})
    other["device"] = {**other["device"], "name": "Other GPU"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="from another GPU"):
        T.main(["--from-json", str(tmp_path / "fp16.json"), "--bf16-runs", str(tmp_path / "other.json"),
                "--out", str(tmp_path / "out"), "--merge-with", ""])
    with pytest.raises(SystemExit, match="different activation dtypes"):
        T.merge_runs([fp16, bf16_run_of({("a", "dequant_cublas"): [9] * 3})])


def test_bf16_end_is_at_most_fp16s_and_fp16s_past_the_bf16_grid():
    # a: fp16's tiled range to 1024; in bf16 wgmma wins everywhere on a grid to 512 only -> fp16's end (bf16 not
    # timed past 512), not the grid's top. b: fp16's range to 256 (the fallback wins from 512); bf16's timings win
    # to 1024 -> clamped to fp16's 256 (bf16's crossover comes no later). c: fp16's range ends at 64, below the bf16
    # grid; c timed in bf16 anyway -> fp16's 64.
    run = wgmma_run_of({"a": [6, 5, 9, 15, 30, 50], "b": [6, 5, 9, 15, 40, 80], "c": [6, 5, 30, 30, 60, 90]})
    short = bf16_run_of({("a", "wgmma"): [20, 30], ("a", "dequant_cublas"): [25, 35]}, ms=(256, 512))
    assert T.bf16_range_ends(run, short) == {"a": {2: 1024, 4: 1024}}
    wide = bf16_run_of({("b", "wgmma"): [20, 30, 50], ("b", "dequant_cublas"): [25, 35, 60],
                        ("c", "wgmma"): [20, 30, 50], ("c", "dequant_cublas"): [25, 35, 60]})
    assert T.bf16_range_ends(run, wide) == {"b": {2: 256, 4: 256}, "c": {2: 64, 4: 64}}


def test_own_row_shapes_take_rows_of_their_own_timed_on_a_prefix_of_the_grid(tmp_path, monkeypatch):
    # an lm_head-like shape (OWN_ROW_SHAPES; here c) timed to M = 128 only, merged with a run of a to M = 1024: c gets an
    # N x K row alone (no size row: a shape of c's size still takes a's size row, as before); its crossovers to 128
    # are its own, and its tiled range, which ran to 128, continues to a's size row's end (512) with a's bf16 end (256)
    full = wgmma_run_of({"a": [30, 10, 15, 20, 30, 70]})  # a: wgmma to 512, the fallback at 1024
    partial = run_of({("c", "gemv"): [0.5, 99, 99], ("c", "kernel"): [1, 20, 40], ("c", "wgmma"): [30, 10, 15],
                      ("c", "dequant_cublas"): [20, 20, 20]}, ms=(1, 64, 128))
    partial["commit"] = "lm"
    with pytest.raises(SystemExit, match=r"not timed at every M .*\('c', 256, 2\)"):  # (not an own-row shape)
        T.merge_runs([full, partial])
    monkeypatch.setattr(T, "OWN_ROW_SHAPES", ["c"])
    merged = T.merge_runs([full, partial])
    bf16 = bf16_run_of({("a", "wgmma"): [20, 30, 50], ("a", "dequant_cublas"): [25, 25, 40]})  # a's bf16 end: 256
    rows = T.crossovers(merged, bf16)
    assert [(r["weights"], r["shape_n"], r["shape_k"]) for r in rows] == [(4096 * 1024, 0, 0), (8192 * 4096, 8192, 4096)]
    a, c = rows
    assert a["max_tile_m"] == {2: 512, 4: 512} and a["max_tile_m_bf16"] == {2: 256, 4: 256}
    assert c["max_gemv_m"] == {2: 1, 4: 1} and c["max_kernel_m"] == {2: 1, 4: 1} and c["min_wgmma_m"] == {2: 1, 4: 1}
    assert c["max_tile_m"] == {2: 512, 4: 512} and c["max_tile_m_bf16"] == {2: 256, 4: 256}
    # where its own range ends inside its grid (the fallback from 128), nothing is inherited
    partial["rows"] = [r for r in partial["rows"] if not (r["path"] == "wgmma" and r["M"] == 128)]
    c = T.crossovers(T.merge_runs([full, partial]), bf16)[1]
    assert c["max_tile_m"] == {2: 64, 4: 64} and c["max_tile_m_bf16"] == {}
    T.write_markdown(merged, str(tmp_path / "t.md"), bf16)  # (c's table stops at 128)
    md = (tmp_path / "t.md").read_text()
    assert "| 8192 x 4096 | gemv 1; 1 / 512 (1); bf16 to 256 |" in md and "## c (N=8192, K=4096)" in md


def test_own_row_shape_below_every_size_row_keeps_its_range_and_other_shapes_need_every_m(monkeypatch):
    # b (an own-row shape, 2048 x 2048) timed to M = 128 with its tiled range running to 128; the only size row is c's
    # (8192 x 4096, larger): no donor, so b's range stays at its grid's top. A shape that is not an own-row one still
    # needs every M of the grid (size_rows raises, as before own-row shapes).
    big = wgmma_run_of({"c": [30, 10, 15, 20, 30, 70]})
    small = run_of({("b", "kernel"): [1, 20, 40], ("b", "wgmma"): [30, 10, 15], ("b", "dequant_cublas"): [20] * 3},
                   ms=(1, 64, 128))
    monkeypatch.setattr(T, "OWN_ROW_SHAPES", ["b"])
    merged = T.merge_runs([big, small])
    rows = T.crossovers(merged)
    assert [(r["weights"], r["shape_n"]) for r in rows] == [(2048 * 2048, 2048), (8192 * 4096, 0)]
    assert rows[0]["max_tile_m"] == {2: 128, 4: 128} and rows[1]["max_tile_m"] == {2: 512, 4: 512}
    monkeypatch.setattr(T, "OWN_ROW_SHAPES", [])
    with pytest.raises(KeyError):  # b (no longer an own-row shape) was not timed past 128
        T.size_rows({**merged, "rows": [r for r in merged["rows"] if r["shape"] == "b"]})
