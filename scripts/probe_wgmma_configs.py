"""The wgmma op at every CTA shape and split count the tuning aids allow, next to the rule's plan: for each
shape and M, wgmma_gemm (k = --k, default 4; fp16, cold L2, CUDA-graph medians) with row tiles 8 / 16 x splits 1-8 x
the first stage alone (never / always; 0: the rule's), plus the rule and cuBLAS fp16. The row-tiles aid acts from M
= 33 (8: two warpgroups, 64 tokens to M = 64 and the rule's 80-160 above; 16: four,
chunks of 64); each row's `plan` says what ran. --tail: also the rule without the split tail ("no tail",
kbit._C._set_wgmma_whole_clusters(0)) and, per forced split count, its tail ("... tail": the units' full waves of
clusters run whole, the rest split). --one-each: also the rule with a cluster launched per cluster of work ("rule
one each", kbit._C._set_wgmma_grid_clusters(-1); the rule's persistent CTAs run several units each where the work
exceeds the clusters the GPU runs at once), alternating with the rule over --rounds rounds.
Prints one line per cell and writes a JSON of rows (shape, M, k, config, plan, us).

    python scripts/probe_wgmma_configs.py --shapes Q,O --ms 64 --out $OUT/configs.json
"""
from __future__ import annotations

import argparse
import json

import torch
import torch.nn.functional as F

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import shape_weight_copies


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="64")
    p.add_argument("--row-tiles", default="8,16")
    p.add_argument("--splits", default="1,2,3,4,5,6,7,8")
    p.add_argument("--alone", default="0", help="first-stage-alone modes to force (1 never, 2 always; 0 the rule)")
    p.add_argument("--k", type=int, default=4, choices=(2, 3, 4, 5), help="bits per weight")
    p.add_argument("--tail", action="store_true", help="also the rule without the split tail and each split's tail")
    p.add_argument("--one-each", action="store_true", help="also the rule with a cluster launched per cluster of work")
    p.add_argument("--rounds", type=int, default=1, help="times each config is timed, alternating (the rows keep each)")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    dev, info, timer = tuning_setup(0.0)
    C = kbit._C
    rows = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        _, fp16, copies = shape_weight_copies(S.SHAPES[name], a.k, dev, info["l2_bytes"])
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            t = timer.measure([lambda w=w: F.linear(x, w) for w in fp16], Work(0, 0, "fp16"))
            rows.append({"shape": name, "M": M, "k": a.k, "config": "fp16", "us": t.median_us})
            print(f"{name} M={M} fp16 {t.median_us:.2f} us", flush=True)
            # (label, row tiles, splits, first stage alone, whole clusters: -1 the rule, 0 none, -2 the full waves',
            #  clusters launched: 0 the rule, -1 one per cluster of work)
            configs = [("rule", 0, 0, 0, -1, 0)] + ([("rule one each", 0, 0, 0, -1, -1)] if a.one_each else []) + (
                [("no tail", 0, 0, 0, 0, 0)] if a.tail else []) + [
                (f"rt{rt} s{s}" + (f" a{al}" if al else "") + (" tail" if wc == -2 else ""), rt, s, al, wc, 0)
                for rt in map(int, a.row_tiles.split(",")) for s in map(int, a.splits.split(",") if a.splits else [])
                for al in map(int, a.alone.split(",")) for wc in ((0, -2) if a.tail and s > 1 else (0,))]
            for label, rt, s, al, wc, grid in configs * a.rounds:
                C._set_wgmma_row_tiles(rt); C._set_wgmma_splits(s); C._set_wgmma_first_stage_alone(al)
                C._set_wgmma_grid_clusters(grid)
                try:
                    if wc == -2:  # the full waves of clusters of s CTAs run whole
                        C._set_wgmma_whole_clusters(0)
                        q = C._wgmma_launch_plan(M, N, K, a.k)
                        wc = q["units"] // (q["splits"] * q["resident_clusters"]) * q["resident_clusters"]
                    C._set_wgmma_whole_clusters(wc)
                    plan = dict(C._wgmma_launch_plan(M, N, K, a.k))
                    t = timer.measure([lambda c=c: torch.ops.kbit.wgmma_gemm(x, *c, a.k) for c in copies], Work(0, 0, label))
                except RuntimeError as e:
                    print(f"{name} M={M} {label}: {str(e)[:120]}", flush=True)
                    continue
                finally:
                    C._set_wgmma_row_tiles(0); C._set_wgmma_splits(0); C._set_wgmma_first_stage_alone(0)
                    C._set_wgmma_whole_clusters(-1); C._set_wgmma_grid_clusters(0)
                rows.append({"shape": name, "M": M, "k": a.k, "config": label, "plan": plan, "us": t.median_us})
                print(f"{name} M={M} {label:22s} {t.median_us:7.2f} us  plan {plan}", flush=True)
        del copies, fp16
        torch.cuda.empty_cache()
    if a.out:
        with open(a.out, "w") as f:
            json.dump({**run_meta(info), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
