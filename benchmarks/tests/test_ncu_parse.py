"""Parsing Nsight Compute CSV (both unit spellings ncu versions use)."""
from benchmarks.ncu_times import parse_ncu_csv, per_call

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(i, name, unit, value):
    return (f'"{i}","1","python","h","{name}","1","7","(128, 1, 1)","(40, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"')


def test_parse_and_group_per_call():
    text = "\n".join(["==PROF== Connected to process 1", HEADER,
                      row(0, "dequant", "nsecond", "5,000"), row(1, "gemm", "nsecond", "7,000"),
                      row(2, "dequant", "ns", "5,200"), row(3, "gemm", "us", "7.2")])
    kernels = parse_ncu_csv(text)
    assert [round(t, 3) for _, t in kernels] == [5.0, 7.0, 5.2, 7.2]
    res = per_call(kernels, calls=2)
    assert res["kernels_per_call"] == 2 and abs(res["median_us"] - 12.2) < 1e-9


def test_mismatched_count_is_an_error():
    assert "error" in per_call([("a", 1.0)] * 3, calls=2)
    assert parse_ncu_csv("no csv here") == []
