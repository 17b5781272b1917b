"""Re-render the Markdown report and the plots from a results JSON (e.g. one fetched from the GPU
machine), without running anything:

    python -m benchmarks.render docs/benchmarks/nvidia-h100-80gb-hbm3/results-full.json

Writes <name>.md next to the JSON and the plots into plots/ beside it.
"""
from __future__ import annotations

import argparse
import os
from typing import List

from . import plots, report_md
from .results import ResultSet


def write_report(rs: ResultSet, json_path: str, with_plots: bool = True) -> List[str]:
    """<stem>.md beside json_path, and (if rs has layer timings) plots/<stem>-*.png."""
    stem = os.path.splitext(json_path)[0]
    with open(stem + ".md", "w") as f:
        f.write(report_md.render(rs))
    written = [stem + ".md"]
    if with_plots and any(r.table == "layer" for r in rs.records):
        folder = os.path.join(os.path.dirname(json_path) or ".", "plots")
        written += plots.write_all(rs, folder, os.path.basename(stem) + "-")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    for path in args.json:
        for p in write_report(ResultSet.load(path), path, not args.no_plots):
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
