"""Does a decode cell's time depend on the work just before it? (session 26: ab_paths read the decode
cells 15-35% slower than tune_dispatch on the same machine; ab_paths times each shape's fp16 column up
to M = 1024 right before its kbit column.) Times kbit.gemm and cuBLAS fp16 at M = 1 on a decode shape
(cold L2, CUDA-graph medians, the benchmarks' timer) fresh, right after `--heat-s` seconds of cuBLAS
fp16 at M = 1024 on the 70B gate/up weight, and after idle pauses; records the SM clock and power
(NVML through torch.cuda) before and after each timing. Prints a table and writes JSON to --out.

    python scripts/probe_heat.py --shape llama8b_gu --rounds 2 --out heat.json
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import kbit  # noqa: E402
from benchmarks import shapes as S  # noqa: E402
from benchmarks.harness import Work  # noqa: E402
from benchmarks.session import tuning_setup  # noqa: E402
from benchmarks.weights import cold_copies  # noqa: E402


def gpu_state():
    return {"sm_mhz": torch.cuda.clock_rate(), "watts": torch.cuda.power_draw() / 1000.0,
            "celsius": torch.cuda.temperature()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="llama8b_gu")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--heat-s", type=float, default=3.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dev, info, timer = tuning_setup()
    sh = S.SHAPES[args.shape]
    g = torch.Generator(device=dev).manual_seed(1)
    W = torch.randn(sh.N, sh.K, device=dev, dtype=torch.float16, generator=g) * sh.K ** -0.5
    qw = kbit.quantize(W, k=4)
    qbytes = sum(t.numel() * t.element_size() for t in (qw.packed, qw.absmax, qw.row_scale, qw.codebook))
    qcopies = [qw] + [qw._replace(packed=qw.packed.clone(), absmax=qw.absmax.clone(), row_scale=qw.row_scale.clone())
                      for _ in range(cold_copies(qbytes, info["l2_bytes"]) - 1)]
    wcopies = [W] + [W.clone() for _ in range(cold_copies(W.numel() * 2, info["l2_bytes"]) - 1)]
    x1 = torch.randn(1, sh.K, device=dev, dtype=torch.float16, generator=g)
    big = S.SHAPES["llama70b_gu"]
    Wb = torch.randn(big.N, big.K, device=dev, dtype=torch.float16, generator=g) * big.K ** -0.5
    xb = torch.randn(1024, big.K, device=dev, dtype=torch.float16, generator=g)

    def timed(label, fns):
        before = gpu_state()
        t = timer.measure(fns, Work(0, 0, label))
        return {"label": label, "us": t.median_us, "spread": t.spread, "before": before, "after": gpu_state()}

    def cells(state):
        return [dict(timed("kbit", [lambda q=q: kbit.gemm(x1, q) for q in qcopies]), state=state),
                dict(timed("fp16", [lambda w=w: F.linear(x1, w) for w in wcopies]), state=state)]

    def heat():
        end = time.monotonic() + args.heat_s
        while time.monotonic() < end:
            for _ in range(20):
                F.linear(xb, Wb)
            torch.cuda.synchronize()

    rows = []
    for rnd in range(args.rounds):
        rows += cells(f"fresh{rnd}" if rnd == 0 else f"idle5-{rnd}")
        heat()
        st = gpu_state()
        rows += cells("after-heat")
        rows[-2]["heat_end"] = st
        time.sleep(1.0)
        rows += cells("idle1")
        time.sleep(5.0)
        rows += cells("idle6")
        time.sleep(5.0)
    for r in rows:
        print(f"{r['state']:11s} {r['label']:5s} {r['us']:7.2f} us  sm {r['before']['sm_mhz']}->{r['after']['sm_mhz']} MHz "
              f"power {r['before']['watts']:.0f}->{r['after']['watts']:.0f} W  {r['after']['celsius']} C", flush=True)
    with open(args.out, "w") as f:
        json.dump({"device": info, "shape": args.shape, "heat_s": args.heat_s, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
