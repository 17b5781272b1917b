"""The wgmma plan the rule takes (kbit._C._wgmma_launch_plan: tokens, row tiles, splits, CTAs, units) for benchmark
shapes at each M, k = --k (default 4), on this GPU: one line a shape and M. Above M = 64 also the rule's two candidates
(gemm_cuda.cpp, wgmma_plan_balanced), each forced through kbit._C._set_wgmma_tokens: `fewer` (ceil(M / 128) balanced
chunks) and `more` (one chunk more, where it balances to 80-128 tokens), with whether all their CTAs run in one wave;
where ceil(M / 160) chunks are fewer than of 128, `wide` (those chunks balanced, 144 or 160 tokens, forced;
wgmma_plan_large), `session52` (session 52's rule: chunks of 160, kbit._C._set_wgmma_max_tokens(160)) and `max128`
(the rule without the wide candidate, kbit._C._set_wgmma_max_tokens(128)).

    python3 scripts/probe_wgmma_plans.py --shapes Q,gateup --ms 96,192,384
"""
import argparse

import kbit
from benchmarks import shapes as S
from benchmarks.session import tuning_aids

KEYS = ("tokens", "row_tiles", "splits", "units", "whole_units", "ctas", "grid_ctas")


def cdiv(a, b):
    return -(-a // b)


def describe(plan):
    one_wave = plan["ctas"] <= plan["splits"] * plan["resident_clusters"]
    return " ".join(f"{key}={plan[key]}" for key in KEYS) + f" one_wave={int(one_wave)}"


def forced(tokens, M, N, K, k, aid="wgmma_tokens"):
    with tuning_aids(**{aid: tokens}):
        return kbit._C._wgmma_launch_plan(M, N, K, k)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="192")
    p.add_argument("--k", type=int, default=4)
    a = p.parse_args()
    for name in a.shapes.split(","):
        shape = S.SHAPES[name]
        for M in map(int, a.ms.split(",")):
            print(f"{name} M={M} {describe(kbit._C._wgmma_launch_plan(M, shape.N, shape.K, a.k))}")
            if M <= 64:
                continue
            chunks = cdiv(M, 128)
            for label, n in (("fewer", chunks), ("more", chunks + 1)):
                tokens = cdiv(cdiv(M, n), 16) * 16
                if tokens >= 80:
                    print(f"  {label}: {describe(forced(tokens, M, shape.N, shape.K, a.k))}")
            if cdiv(M, 160) < chunks:
                wide = cdiv(cdiv(M, cdiv(M, 160)), 16) * 16
                print(f"  wide: {describe(forced(wide, M, shape.N, shape.K, a.k))}")
                print(f"  session52: {describe(forced(160, M, shape.N, shape.K, a.k, 'wgmma_max_tokens'))}")
                print(f"  max128: {describe(forced(128, M, shape.N, shape.K, a.k, 'wgmma_max_tokens'))}")


if __name__ == "__main__":
    main()
