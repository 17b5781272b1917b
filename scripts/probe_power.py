"""Sustained load: kbit ops (--ops; kbit.gemm's op by default) against cuBLAS fp16 (F.linear on the unquantized
weight), each graph replayed back to back for --seconds, with the SM clock, board power and clock-limit reasons read
from NVML every 4 ms and the energy counter read at half the phase and at its end. Answers whether a cell's time gap
is cycles or clocks: under the power cap a kernel drawing less power a cycle runs at higher clocks (the harness's
ClockWatch reads the clock once, after a timing).

Per (shape, M, path), from the second half of the phase (steady state): the per-call median (us), the median SM
clock (MHz), cycles per call (us x MHz), mean power (W; NVML's reading averages over about a second), energy per
call (mJ, from the counter over the second half), and the fraction of samples with a power limit active. Paths
alternate, the order reversed each round; the GPU idles --cool seconds between phases. (Session 55's runs 1-2 ran an
earlier form: the energy over the whole phase, the steady window from a host time up to ~50 ms early.)

    python3 scripts/probe_power.py --cells llama70b_gu:512,llama8b_gu:1024 --out power.json
"""
import argparse
import json
import statistics
import threading
import time

import torch
import torch.nn.functional as F

import kbit
from benchmarks import shapes as S
from benchmarks.session import run_meta, tuning_setup
from benchmarks.weights import shape_weight_copies

POWER_LIMITS = 0x4 | 0x80  # SW power cap, HW power brake
THERMAL_LIMITS = 0x20 | 0x40 | 0x8  # SW thermal, HW thermal, HW slowdown


class Sampler(threading.Thread):
    def __init__(self, nvml, handle, reasons, period_s):
        super().__init__(daemon=True)
        self.nvml, self.handle, self.reasons, self.period_s = nvml, handle, reasons, period_s
        self.samples, self.stop_flag = [], threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            t = time.monotonic()
            mhz = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
            mw = self.nvml.nvmlDeviceGetPowerUsage(self.handle)
            why = self.reasons(self.handle)
            self.samples.append((t, mhz, mw / 1e3, why))
            time.sleep(self.period_s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cells", required=True, help="shape:M,shape:M,...")
    p.add_argument("--ops", default="gemm", help="kbit ops timed beside cuBLAS: gemm (the dispatch), wgmma_gemm, "
                   "dequant_cublas_gemm, ...")
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--seconds", type=float, default=1.5)
    p.add_argument("--cool", type=float, default=1.5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.seconds < 0.2:
        p.error("--seconds: at least 0.2 (the steady window is its second half)")
    dev, info, timer = tuning_setup()
    if timer.clocks.nvml() is None:
        raise SystemExit("probe_power: NVML cannot be read here (the harness warned why)")
    nvml, handle, reasons = timer.clocks.nvml()
    power_limit_w = nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3
    print(f"power limit {power_limit_w:.0f} W", flush=True)
    stream = torch.cuda.Stream(dev)
    rows = []
    for cell in a.cells.split(","):
        name, m = cell.split(":")
        M, shape = int(m), S.SHAPES[name]
        _, dense, quant = shape_weight_copies(shape, a.k, dev, info["l2_bytes"])
        x = torch.randn(M, shape.K, device=dev, dtype=torch.float16)
        paths = {"fp16": [lambda w=w: F.linear(x, w) for w in dense]}
        for op in a.ops.split(","):
            fn = getattr(torch.ops.kbit, op)
            paths[op] = [lambda c=c, fn=fn: fn(x, *c, a.k) for c in quant]
        graphs = {}
        for path, fns in paths.items():
            with torch.cuda.stream(stream):
                for fn in fns:
                    fn()
            torch.cuda.synchronize()
            # calls a replay: about 2 ms of work, whole rotations of the copies
            t0 = time.perf_counter()
            for _ in range(3):
                with torch.cuda.stream(stream):
                    for fn in fns:
                        fn()
            torch.cuda.synchronize()
            est_us = (time.perf_counter() - t0) / (3 * len(fns)) * 1e6
            calls = len(fns) * max(1, round(2000 / max(est_us, 1) / len(fns)))
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                for i in range(calls):
                    fns[i % len(fns)]()
            graphs[path] = (g, calls)
        for r in range(a.rounds):
            for path in (list(paths) if r % 2 == 0 else list(paths)[::-1]):
                g, calls = graphs[path]
                time.sleep(a.cool)
                sampler = Sampler(nvml, handle, reasons, 0.004)
                sampler.start()
                # Replays back to back, the host at most 8 ahead (so its clock tracks the GPU's). At half the phase
                # the queue is drained once (a gap of microseconds) to mark the steady window exactly: its replays,
                # the NVML samples after it and the energy counter from it.
                events, start, mid = [], time.monotonic(), None
                with torch.cuda.stream(stream):
                    while time.monotonic() - start < a.seconds:
                        if mid is None and time.monotonic() - start >= a.seconds / 2:
                            torch.cuda.synchronize()
                            mid = (len(events), time.monotonic(), nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
                        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        s.record(stream)
                        g.replay()
                        e.record(stream)
                        events.append((s, e))
                        if len(events) > 8:
                            events[-9][1].synchronize()
                torch.cuda.synchronize()
                e1 = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                sampler.stop_flag.set()
                sampler.join()
                half, t_mid, e_mid = mid
                per_call = [s.elapsed_time(e) * 1e3 / calls for s, e in events[half:]]
                steady = [smp for smp in sampler.samples if smp[0] >= t_mid]
                us = statistics.median(per_call)
                mhz = statistics.median(smp[1] for smp in steady)
                row = {"shape": name, "M": M, "path": path, "round": r, "calls": calls, "replays": len(events),
                       "us": us, "first_replay_us": events[0][0].elapsed_time(events[0][1]) * 1e3 / calls,
                       "sm_mhz": mhz, "kcycles": us * mhz / 1e3,
                       "watts": statistics.mean(smp[2] for smp in steady),
                       "mj_per_call": (e1 - e_mid) / ((len(events) - half) * calls),
                       "power_limited": sum(1 for smp in steady if smp[3] & POWER_LIMITS) / max(len(steady), 1),
                       "thermal_limited": sum(1 for smp in steady if smp[3] & THERMAL_LIMITS) / max(len(steady), 1)}
                rows.append(row)
                print(f"{name} M={M} {path:5s} r{r}: {us:8.1f} us  {mhz:5.0f} MHz  {row['kcycles']:8.1f} kcycles  "
                      f"{row['watts']:5.0f} W  {row['mj_per_call']:7.2f} mJ/call  power-limited "
                      f"{row['power_limited']:.2f}  first replay {row['first_replay_us']:.1f} us", flush=True)
        del graphs, paths, dense, quant
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump({**run_meta(info), "power_limit_w": power_limit_w, "k": a.k, "seconds": a.seconds,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
