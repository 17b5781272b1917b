"""The wgmma plan the rule takes (kbit._C._wgmma_launch_plan: tokens, row tiles, splits, CTAs, units) for benchmark
shapes at each M, k = 4, on this GPU: one line a shape and M.

    python3 scripts/probe_wgmma_plans.py --shapes Q,gateup --ms 96,192,384
"""
import argparse

import kbit
from benchmarks import shapes as S


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="192")
    p.add_argument("--k", type=int, default=4)
    a = p.parse_args()
    for name in a.shapes.split(","):
        shape = S.SHAPES[name]
        for M in map(int, a.ms.split(",")):
            plan = kbit._C._wgmma_launch_plan(M, shape.N, shape.K, a.k)
            cells = " ".join(f"{key}={plan[key]}" for key in ("tokens", "row_tiles", "splits", "units", "whole_units",
                                                               "ctas", "grid_ctas"))
            print(f"{name} M={M} {cells}")


if __name__ == "__main__":
    main()
