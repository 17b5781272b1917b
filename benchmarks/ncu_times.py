"""Kernel-only times from Nsight Compute, for one case (a thin wrapper; needs `ncu` on PATH).

    python -m benchmarks.ncu_times --shape gateup --m 1 --k 4 [--kernels kbit,dq+cuBLAS,fp16]
    python -m benchmarks.ncu_times --shape moe_gu --experts 8 --m 4 --k 4 --l2 hot

For each registry column it runs one child process under
`ncu --profile-from-start off --metrics gpu__time_duration.sum --cache-control all|none
--clock-control none`; the child warms up, then calls the kernel `--calls` times between
cudaProfilerStart/Stop. Reported per call: the sum of gpu__time_duration over the CUDA kernels
one call launches (median over calls), so launch gaps are excluded: compare with the graph
timings of run.py to see the launch/latency overhead. `--cache-control all` (cold) flushes the
caches before every kernel; `none` (hot) leaves them. Clocks are left as they are.
"""
from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

import numpy as np

UNIT_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}


def parse_ncu_csv(text: str, metric: str = "gpu__time_duration.sum") -> List[Tuple[str, float]]:
    """(kernel name, microseconds) per profiled kernel, in launch order, from `ncu --csv` output
    (details page: one row per kernel and metric; lines before the CSV header are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    out = []
    for row in rows:
        if row.get("Metric Name") != metric:
            continue
        unit = (row.get("Metric Unit") or "nsecond").strip()
        value = float(row["Metric Value"].replace(",", ""))
        out.append((row.get("Kernel Name", "?"), value * UNIT_TO_US.get(unit, 1e-3)))
    return out


def per_call(kernels: List[Tuple[str, float]], calls: int) -> Dict:
    """Group the profiled kernels into `calls` equal consecutive chunks (one per call)."""
    if not kernels or len(kernels) % calls:
        return {"error": f"{len(kernels)} kernels profiled for {calls} calls"}
    per = len(kernels) // calls
    sums = [sum(t for _, t in kernels[i * per:(i + 1) * per]) for i in range(calls)]
    names = [n for n, _ in kernels[:per]]
    return {"median_us": float(np.median(sums)), "p10_us": float(np.percentile(sums, 10)),
            "p90_us": float(np.percentile(sums, 90)), "kernels_per_call": per, "kernel_names": names}


def child(args) -> int:
    """Runs under ncu: set up one registry kernel, warm up, profile `calls` calls."""
    import torch

    from . import registry
    from . import shapes as S
    from .cases import Case, Layer
    from .plan import DTYPES
    from .weights import LayerWeights

    kernel = registry.get(args.kernels)
    shape = S.get(args.shape)
    layer = Layer(shape, args.experts, args.k if kernel.per_k else None, DTYPES[args.dtype])
    case = Case(layer, args.m)
    lw = LayerWeights(shape, args.experts, torch.device("cuda"))
    setup = kernel.setup(layer, lw)
    inputs = setup.prepare(lw.inputs(case))
    for _ in range(3):
        setup.call(setup.weights, inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(args.calls):
        setup.call(setup.weights, inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def profile(kernel: str, args, ncu: str) -> Dict:
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "ncu.csv")
        cmd = [ncu, "--csv", "--print-units", "base", "--log-file", log, "--profile-from-start", "off",
               "--metrics", "gpu__time_duration.sum", "--cache-control", "all" if args.l2 == "cold" else "none",
               "--clock-control", "none", "--target-processes", "all",
               sys.executable, "-m", "benchmarks.ncu_times", "--child", "--kernels", kernel,
               "--shape", args.shape, "--experts", str(args.experts), "--m", str(args.m), "--k", str(args.k),
               "--dtype", args.dtype, "--calls", str(args.calls)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        text = open(log).read() if os.path.exists(log) else ""
        if proc.returncode != 0:
            return {"error": f"ncu exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"}
        return per_call(parse_ncu_csv(text), args.calls)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="gateup")
    ap.add_argument("--experts", type=int, default=0, help="0 = dense; E = grouped over E experts")
    ap.add_argument("--m", type=int, default=1, help="rows (dense) or tokens per expert")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    ap.add_argument("--kernels", default="kbit,dq+cuBLAS,fp16", help="comma list of registry columns")
    ap.add_argument("--l2", default="cold", choices=("cold", "hot"))
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu (Nsight Compute) is not on PATH: no kernel-only times. run.py's graph timings need no ncu.")
        return 2
    print(f"{args.shape} E={args.experts} m={args.m} k={args.k} {args.dtype}, {args.l2} L2 (ncu, per call):")
    for kernel in args.kernels.split(","):
        res = profile(kernel, args, ncu)
        if "error" in res:
            print(f"  {kernel:10s} error: {res['error']}")
        else:
            names = ", ".join(n[:40] for n in res["kernel_names"])
            print(f"  {kernel:10s} {res['median_us']:9.2f} us  (p10 {res['p10_us']:.2f}, p90 {res['p90_us']:.2f}; "
                  f"{res['kernels_per_call']} kernel(s)/call: {names})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
