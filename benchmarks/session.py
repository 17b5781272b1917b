"""What every benchmark command shares: common options, the device and timer, run metadata,
and writing results (JSON for machines, Markdown for people, PNG plots)."""
from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import subprocess
import sys
import time
from typing import Dict, List, Optional

import torch

import kbit

from . import harness, registry, render
from .measure import Env
from .results import ResultSet, open_record

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRY_RUN_OUT = os.path.join(REPO, "out", "benchmarks-dry-run")


def add_common_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--mode", choices=("fast", "full"), default="fast",
                    help="fast: a few shapes (< 1 min); full: everything (< 8 min on an H100)")
    ap.add_argument("--out", default=None,
                    help="results root; files go to <out>/<gpu-name-slug>/ (default docs/benchmarks, "
                         "or out/benchmarks-dry-run for --dry-run)")
    ap.add_argument("--tag", default="", help="suffix for the output file names (e.g. run2)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: run every step on the CPU with shapes divided by --shrink and fake timings")
    ap.add_argument("--shrink", type=int, default=8, help="dry run: divide K and N by this")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop starting new timings after this long (default: the mode's budget)")
    ap.add_argument("--replays", type=int, default=None, help="graph replays per timing")
    ap.add_argument("--no-plots", action="store_true")


def git_commit() -> str:
    """The checkout's commit (+dirty), or $KBIT_BENCH_COMMIT where set: the GPU machine receives a
    copy of the working tree whose git metadata can lag, so device runs pass the commit in."""
    if os.environ.get("KBIT_BENCH_COMMIT"):
        return os.environ["KBIT_BENCH_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (head or "unknown") + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        return "unknown"


@contextlib.contextmanager
def tuning_aids(**values):
    """kbit._C._set_<name>(value) for each name inside, the previous values restored after (every aid returns its
    previous value)."""
    setters = {name: getattr(kbit._C, f"_set_{name}") for name in values}
    previous = {name: setters[name](value) for name, value in values.items()}
    try:
        yield setters
    finally:
        for name, value in previous.items():
            setters[name](value)


def tuning_setup(cool_s: float = 0.0, sustain_s: float = 0.0):
    """(device, device info, timer) for the tuning sweeps (tune_dispatch, tune_grouped, ab_paths): CUDA-graph
    medians of 5-9 replays, at most 0.15 s per timing, or with sustain_s > 0 the sustained regime's (the second
    half of sustain_s seconds of replays); cool_s and sustain_s as TimerConfig's."""
    dev = torch.device("cuda")
    timer = harness.GraphTimer(dev, harness.TimerConfig(replays=9, min_replays=5, max_seconds=0.15, cool_s=cool_s,
                                                        sustain_s=sustain_s))
    return dev, harness.device_info(dev, dry_run=False), timer


def run_meta(info: Dict) -> Dict:
    """The header fields of a tuning run's JSON: device, date, commit, torch."""
    return {"device": info, "date": datetime.date.today().isoformat(), "commit": git_commit(), "torch": torch.__version__}


def tuning_parser(doc: str) -> argparse.ArgumentParser:
    """The argument parser of a tuning sweep (tune_dispatch, tune_grouped, ab_paths), described by
    the first line of its module docstring, with --out and --from-json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default="out")
    ap.add_argument("--from-json", default=None, help="render the tables from an earlier run's JSON")
    return ap


def tuning_run(args, prefix: str, measure) -> Dict:
    """A tuning sweep's run: read back from args.from_json, or measure() and write
    <args.out>/<prefix>-<device slug>.json."""
    import json
    os.makedirs(args.out, exist_ok=True)
    if args.from_json:
        with open_record(args.from_json) as f:
            return json.load(f)
    run = measure()
    with open(os.path.join(args.out, f"{prefix}-{run['device']['slug']}.json"), "w") as f:
        json.dump(run, f, indent=1)
    return run


def open_env(args, max_minutes: float, replays: int, min_calls: int, log=print) -> Dict:
    """Device, timer, L2 size and copy bandwidth; returns {"env": Env, "meta": {...}}."""
    if not args.dry_run and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --dry-run to exercise the benchmark on the CPU")
    device = torch.device("cpu") if args.dry_run else torch.device("cuda", torch.cuda.current_device())
    shrink = args.shrink if args.dry_run else 1
    cfg = harness.TimerConfig(replays=replays, min_calls=min_calls)
    timer = harness.make_timer(args.dry_run, device, cfg, shrink)
    info = harness.device_info(device, args.dry_run, shrink)
    copy_bytes = (1 << 30) // (shrink * shrink)
    copy = harness.copy_bandwidth(timer, device, copy_bytes)
    log(f"{info['name']}: L2 {info['l2_bytes'] / 2**20:.1f} MiB, device copy {copy['gbps']:.0f} GB/s")
    env = Env(device=device, timer=timer, l2_bytes=info["l2_bytes"], copy_gbps=copy["gbps"],
              deadline=time.monotonic() + 60.0 * max_minutes, log=log)
    meta = {
        "device": info, "copy": copy, "dry_run": bool(args.dry_run), "shrink": shrink,
        "torch": torch.__version__, "cuda": torch.version.cuda, "kbit": kbit.__version__,
        "kbit_cuda_kernels": kbit.cuda_kernels_compiled(), "git": git_commit(),
        "python": platform.python_version(), "host": platform.node(),
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([os.path.basename(sys.executable), "-m", "benchmarks." +
                             os.path.splitext(os.path.basename(sys.argv[0]))[0]] + sys.argv[1:]),
        "timer": vars(cfg), "kernels": registry.describe(),
    }
    return {"env": env, "meta": meta}


def out_dir(args, rs: ResultSet) -> str:
    root = args.out or (DRY_RUN_OUT if args.dry_run else os.path.join(REPO, "docs", "benchmarks"))
    return os.path.join(root, rs.meta["device"]["slug"])


def file_prefix(args, kind: str) -> str:
    return f"{kind}-{args.mode}" + (f"-{args.tag}" if args.tag else "")


def write_outputs(args, rs: ResultSet, kind: str, log=print) -> List[str]:
    """<dir>/<kind>-<mode>[-tag].json and .md, plus plots/<same>-*.png (layers only)."""
    folder, prefix = out_dir(args, rs), file_prefix(args, kind)
    os.makedirs(folder, exist_ok=True)
    json_path = os.path.join(folder, prefix + ".json")
    rs.save(json_path)
    written = [json_path] + render.write_report(rs, json_path, with_plots=not args.no_plots)
    for p in written:
        log(f"wrote {os.path.relpath(p)}")
    return written


def finish_meta(rs: ResultSet, env: Env) -> None:
    rs.meta["elapsed_s"] = env.elapsed()
    rs.meta["truncated"] = env.truncated
    rs.meta["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def checkpoint_writer(args, rs: ResultSet, kind: str, env: Env):
    """Saves the JSON after each group so a run killed by a time limit keeps its results."""
    def save() -> None:
        finish_meta(rs, env)
        folder = out_dir(args, rs)
        os.makedirs(folder, exist_ok=True)
        rs.save(os.path.join(folder, file_prefix(args, kind) + ".json"))
    return save


def warn_cpu_quantize(env: Env, log=print) -> Optional[str]:
    from .ops import has_kernel
    if env.device.type == "cuda" and not has_kernel("kbit::quantize", env.device):
        msg = ("kbit has no CUDA quantize in this build: weights are quantized on the CPU (slow; expert "
               "stacks repeat a few distinct experts)")
        log("warning: " + msg)
        return msg
    return None


def start(args, plan, max_minutes: float, replays: int, log=print):
    """Open the environment and an empty ResultSet holding the plan (shared by every script).

    Returns (env, rs); a CPU-quantization warning, if any, is already noted in rs.
    """
    opened = open_env(args, max_minutes, replays, plan.min_calls, log=log)
    env, meta = opened["env"], opened["meta"]
    meta["plan"] = plan.to_json()
    rs = ResultSet(meta)
    msg = warn_cpu_quantize(env, log=log)
    if msg:
        rs.note(msg)
    return env, rs
