"""The wgmma op (k = --k, default 4; x of --dtype, default fp16; cold L2, CUDA-graph medians, the harness's timer)
under named sets of tuning aids, alternating the sets round by round in one process (their order reversed every other
round), with each set's plan (kbit._C._wgmma_launch_plan) printed once per cell. Where probe_wgmma_diag_bench.py
varies one aid, this takes any combination, e.g. the rule against stream-K with at most 120 CTAs:

    python3 scripts/probe_wgmma_aid_sets.py --shapes Q,llama8b_gu --ms 256 --out c.json \
        --configs "rule:;stream:wgmma_stream=2;stream120:wgmma_stream=2,wgmma_grid_clusters=120"

(Session 54's runs 2-5 ran it as scripts/probe_wgmma_configs.py, the name of another probe, since restored.)
"""
import argparse
import json
import statistics

import torch

import kbit
from benchmarks import shapes as S
from benchmarks.harness import Work
from benchmarks.session import run_meta, tuning_aids, tuning_setup
from benchmarks.weights import shape_weight_copies


def parse_configs(text):
    """"name:aid=v,aid=v;name:..." -> {name: {aid: int}} (an empty list: the rule)."""
    configs = {}
    for part in text.split(";"):
        name, _, aids = part.partition(":")
        configs[name.strip()] = {a.split("=")[0].strip(): int(a.split("=")[1]) for a in aids.split(",") if a.strip()}
    return configs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="256")
    p.add_argument("--configs", required=True, help='"name:aid=value,...;name:..." (kbit._C._set_<aid>)')
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--dtype", default="float16", choices=("float16", "bfloat16"), help="x's dtype")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    configs = parse_configs(a.configs)
    dev, info, timer = tuning_setup()
    rows = []
    for name in a.shapes.split(","):
        shape = S.SHAPES[name]
        _, _, copies = shape_weight_copies(shape, a.k, dev, info["l2_bytes"])
        for M in map(int, a.ms.split(",")):
            x = torch.randn(M, shape.K, device=dev, dtype=getattr(torch, a.dtype))
            times = {c: [] for c in configs}
            plans = {}
            for r in range(a.rounds):
                for c in (list(configs) if r % 2 == 0 else list(configs)[::-1]):
                    with tuning_aids(**configs[c]):
                        plans[c] = kbit._C._wgmma_launch_plan(M, shape.N, shape.K, a.k)
                        fns = [lambda cp=cp: torch.ops.kbit.wgmma_gemm(x, *cp, a.k) for cp in copies]
                        times[c].append(timer.measure(fns, Work(0, 0, f"{name} {M} {c}")).median_us)
            base = statistics.median(times[list(configs)[0]])
            for c in configs:
                t = statistics.median(times[c])
                q = plans[c]
                print(f"{name} M={M} {c}: {t:.2f} us ({t / base:.3f}) tokens={q['tokens']} splits={q['splits']} "
                      f"stream={q['stream']} grid_ctas={q['grid_ctas']} ctas={q['ctas']} units={q['units']} "
                      f"resident_clusters={q['resident_clusters']}", flush=True)
            rows.append({"shape": name, "M": M, "us": times, "plans": plans})
        del copies
    with open(a.out, "w") as f:
        json.dump({**run_meta(info), "extension": kbit._C.__file__, "configs": configs, "k": a.k, "dtype": a.dtype,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
