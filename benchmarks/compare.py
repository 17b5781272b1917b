"""Run-to-run reproducibility: match the timings of two runs and summarize their differences.

    python -m benchmarks.compare A.json B.json      # two result files (e.g. the same command twice)
    python -m benchmarks.compare A.json             # run 1 vs run 2 inside one --repeat-run file
"""
from __future__ import annotations

import argparse
from typing import Dict, List, Tuple

import numpy as np

from .results import Record, ResultSet


def pair_up(a: List[Record], b: List[Record]) -> List[Tuple[Record, Record]]:
    """Timed records present in both lists (same table, kernel, shape, E, m, k, dtype, L2)."""
    index = {r.key(): r for r in b if r.timed and r.method != "computed"}
    return [(r, index[r.key()]) for r in a if r.timed and r.method != "computed" and r.key() in index]


def summarize(pairs: List[Tuple[Record, Record]]) -> List[Dict]:
    """Per kernel: how many pairs, and the median / p90 / max of |t_b / t_a - 1| in percent."""
    by_kernel: Dict[str, List[Tuple[float, Record]]] = {}
    for ra, rb in pairs:
        by_kernel.setdefault(ra.kernel, []).append((rb.median_us / ra.median_us - 1.0, ra))
    rows = []
    for kernel, diffs in by_kernel.items():
        mags = np.abs([d for d, _ in diffs]) * 100
        worst_d, worst = max(diffs, key=lambda x: abs(x[0]))
        rows.append({"kernel": kernel, "pairs": len(diffs), "median_pct": float(np.median(mags)),
                     "p90_pct": float(np.percentile(mags, 90)), "max_pct": float(mags.max()),
                     "worst": f"{worst.case_label()}: {worst_d * 100:+.1f}%"})
    return rows


def markdown(rows: List[Dict]) -> List[str]:
    out = ["| kernel | pairs | median abs diff | p90 abs diff | max abs diff | worst case |",
           "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['kernel']} | {r['pairs']} | {r['median_pct']:.1f}% | {r['p90_pct']:.1f}% | "
                   f"{r['max_pct']:.1f}% | {r['worst']} |")
    return out


def repeat_pairs(rs: ResultSet) -> List[Tuple[Record, Record]]:
    return pair_up([r for r in rs.records if r.run == 1], [r for r in rs.records if r.run == 2])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b", nargs="?")
    args = ap.parse_args(argv)
    a = ResultSet.load(args.a)
    if args.b:
        b = ResultSet.load(args.b)
        pairs = pair_up([r for r in a.records if r.run == 1], [r for r in b.records if r.run == 1])
    else:
        pairs = repeat_pairs(a)
    if not pairs:
        print("no timings in common")
        return 1
    print("\n".join(markdown(summarize(pairs))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
