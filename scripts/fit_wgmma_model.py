"""The wgmma rule's plan model (gemm_cuda.cpp, wgmma_model_time) checked against measured plans, on the CPU: for every
cell of a plan-grid JSON (scripts/probe_wgmma_plan_grid.py: each cell's plans with their measured times), how many
pairs of plans more than --margin apart the model orders wrongly, and, used as a selector over all of a cell's plans,
how much slower its pick is than the fastest plan (mean and worst over cells). Then a grid over the model's constants.

    python3 scripts/fit_wgmma_model.py docs/benchmarks/nvidia-h200/2026-11-30-session53/run1-plan-grid.json.xz
"""
import argparse
import itertools
import json
import statistics

from benchmarks import shapes as S
from benchmarks.results import open_record


def model_time(q, K, per_group=128, whole=500, split=1000, step=100, step_from=4, per_token=0.0):
    """The busiest cluster's modelled time of plan q (kbit._C._wgmma_launch_plan's dict): work clusters dealt
    round-robin to the clusters that run at once; a whole unit G x (per_group + tokens) + whole, a split CTA its share
    of the groups x (per_group + tokens) + split + step x (splits past step_from) + per_token x tokens x (s - 1) / s."""
    groups, s = -(-K // 256), q["splits"]
    whole_clusters = q["units"] if s == 1 else q["whole_units"] // s
    work = whole_clusters + (q["units"] - q["whole_units"] if s > 1 else 0)
    at_once = min(max(q["resident_clusters"], 1), work)
    whole_cost = groups * (per_group + q["tokens"]) + whole
    split_cost = (-(-groups // s) * (per_group + q["tokens"]) + split + step * max(s - step_from, 0)
                  + per_token * q["tokens"] * (s - 1) / s)
    busiest = 0
    for b in range(at_once):
        w = len(range(b, whole_clusters, at_once))
        busiest = max(busiest, w * whole_cost + (len(range(b, work, at_once)) - w) * split_cost)
    return busiest


def score(cells, margin, **constants):
    """(pairs ordered right, pairs ordered wrong, mean and worst pick / fastest) over the cells."""
    right = wrong = 0
    picks = []
    for K, plans in cells:
        predicted = [model_time(q, K, **constants) for q, _ in plans]
        measured = [t for _, t in plans]
        for i, j in itertools.combinations(range(len(plans)), 2):
            if abs(measured[i] / measured[j] - 1) < margin:
                continue
            if (predicted[i] < predicted[j]) == (measured[i] < measured[j]):
                right += 1
            else:
                wrong += 1
        pick = min(range(len(plans)), key=lambda i: predicted[i])
        picks.append(measured[pick] / min(measured))
    return right, wrong, statistics.mean(picks), max(picks)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("grid_json")
    p.add_argument("--margin", type=float, default=0.03)
    a = p.parse_args()
    rows = json.load(open_record(a.grid_json))["rows"]
    cells = []
    for row in rows:
        med = {label: statistics.median(t) for label, t in row["us"].items() if label != "cuBLAS"}
        cells.append((S.SHAPES[row["shape"]].K, [(row["plans"][label], med[label]) for label in med]))
    print(f"{len(cells)} cells, {sum(len(c[1]) for c in cells)} plans")
    for name, constants in (("session 52 (no step)", {"step": 0}), ("session 53 (100 a split past 4)", {})):
        right, wrong, mean, worst = score(cells, a.margin, **constants)
        print(f"{name}: {wrong} of {right + wrong} pairs misordered; pick / fastest mean {mean:.4f}, worst {worst:.4f}")
    fits = []
    for per_group, whole, split, per_token, step in itertools.product((96, 128, 160), (0, 500, 1000),
                                                                      (500, 1000, 1500, 2000), (0, 2, 4, 8),
                                                                      (0, 100, 200)):
        right, wrong, mean, worst = score(cells, a.margin, per_group=per_group, whole=whole, split=split,
                                          per_token=per_token, step=step)
        fits.append((mean, worst, wrong, dict(per_group=per_group, whole=whole, split=split, per_token=per_token,
                                              step=step)))
    fits.sort(key=lambda f: (f[0], f[1], f[2]))
    print("best constants (pick mean, worst, pairs misordered):")
    for mean, worst, wrong, constants in fits[:8]:
        print(f"  {mean:.4f} {worst:.4f} {wrong} {constants}")


if __name__ == "__main__":
    main()
