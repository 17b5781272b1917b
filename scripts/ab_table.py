"""Side by side: the ab_paths JSONs of several builds or settings (one directory each), per (shape, k, M).

    python scripts/ab_table.py base-1=DIR new-1=DIR base-2=DIR ... [--path wgmma_gemm]

(a label may name one ab_paths JSON instead of a directory: LABEL=path/to/run.json)

Prints a Markdown table: each label's time of `--path` (us) and cuBLAS's (fp16, or bf16 in a --dtype bfloat16 run)
from the first label's run,
then each later label's time over the first's (rounds of the same build are labels of their own).
"""
import argparse
import glob
import json


def load(directory, path):
    """{(shape, k, M): us} of `path` and {(shape, M): us} of cuBLAS (fp16 or bf16) in the directory's ab-*.json (one
    run's), or in the JSON `directory` names."""
    times, fp16 = {}, {}
    names = [directory] if directory.endswith(".json") else sorted(glob.glob(f"{directory}/ab-*.json"))
    for name in names:
        with open(name) as f:
            rows = json.load(f)["rows"]
        for r in rows:
            if r["path"] in ("fp16", "bf16"):
                fp16[(r["shape"], r["M"])] = r["us"]
            if r["path"] == path:
                times[(r["shape"], r["k"], r["M"])] = r["us"]
    return times, fp16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", metavar="LABEL=DIR")
    ap.add_argument("--path", default="wgmma_gemm")
    a = ap.parse_args()
    labels, data = [], []
    for run in a.runs:
        label, _, directory = run.partition("=")
        labels.append(label)
        data.append(load(directory, a.path))
    keys = sorted(set().union(*(d[0].keys() for d in data)), key=lambda x: (x[0], x[1] or 0, x[2]))
    ratios_head = " | ".join(f"{label} / {labels[0]}" for label in labels[1:])
    print("| shape | k | M | cuBLAS | " + " | ".join(labels) + " | " + ratios_head + " |")
    print("|---|---:|---:|---:|" + "---:|" * (2 * len(labels) - 1))
    for key in keys:
        ts = [d[0].get(key) for d in data]
        fp = data[0][1].get((key[0], key[2]))
        cells = [f"{t:.2f}" if t is not None else "-" for t in ts]
        ratios = [f"{t / ts[0]:.3f}" if t is not None and ts[0] else "-" for t in ts[1:]]
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + (f"{fp:.2f}" if fp is not None else "-") + " | ", end="")
        print(" | ".join(cells + ratios) + " |")


if __name__ == "__main__":
    main()
