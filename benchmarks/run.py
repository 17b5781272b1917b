"""The one command: every layer shape x M x k x dtype x L2 state for every registered kernel, the
MoE sweep, and the decode-step block; JSON + Markdown + PNG plots into <out>/<gpu-name-slug>/.

    python -m benchmarks.run --mode fast                  # a few shapes, < 1 minute on an H100
    python -m benchmarks.run --mode full --out docs/benchmarks
    python -m benchmarks.run --mode fast --dry-run        # no GPU: CPU, small shapes, fake timings
"""
from __future__ import annotations

import argparse
import sys

from . import bench_model, registry, report_md, session
from . import plan as P
from .measure import CudaBroken, LayerRunner

#: Minutes of the budget kept for the decode-step block benchmark at the end.
MODEL_RESERVE_MIN = {"fast": 0.2, "full": 1.0}


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    session.add_common_args(ap)
    ap.add_argument("--shapes", help="comma list of shape names (default: the mode's)")
    ap.add_argument("--ms", help="comma list of M values")
    ap.add_argument("--ks", help="comma list of k values")
    ap.add_argument("--dtypes", help="fp16,bf16")
    ap.add_argument("--hot-ms", help="M values also timed with a hot L2")
    ap.add_argument("--sweep-experts", help="MoE sweep: active expert counts")
    ap.add_argument("--sweep-ms", help="MoE sweep: tokens per expert")
    ap.add_argument("--model-batches", help="decode-step block: batch sizes")
    ap.add_argument("--model-ks", help="decode-step block: k values")
    ap.add_argument("--kernels", help="comma list of registry columns to run (default: all)")
    ap.add_argument("--repeat-run", action="store_true",
                    help="time the whole layer plan twice and report run-to-run differences")
    ap.add_argument("--no-model", action="store_true", help="skip the decode-step block benchmark")
    ap.add_argument("--list-kernels", action="store_true", help="print the registry and exit")
    return ap.parse_args(argv)


def plan_from(args) -> P.Plan:
    ints = lambda s: tuple(int(v) for v in s.split(",")) if s else None  # noqa: E731
    strs = lambda s: tuple(v.strip() for v in s.split(",")) if s else None  # noqa: E731
    return P.with_overrides(P.MODES[args.mode], shapes=strs(args.shapes), ms=ints(args.ms), ks=ints(args.ks),
                            dtypes=strs(args.dtypes), hot_ms=ints(args.hot_ms), kernels=strs(args.kernels),
                            sweep_experts=ints(args.sweep_experts), sweep_ms=ints(args.sweep_ms),
                            model_batches=ints(args.model_batches), model_ks=ints(args.model_ks),
                            replays=args.replays, max_minutes=args.max_minutes)


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.list_kernels:
        for name, family, doc in registry.describe():
            print(f"{name:10s} {family:9s} {doc}")
        return 0
    plan = plan_from(args)
    budget = plan.max_minutes * (2 if args.repeat_run else 1)
    env, rs = session.start(args, plan, budget, plan.replays)
    kernels = registry.kernels(plan.kernels)
    groups = P.groups(plan, rs.meta["shrink"])
    cases = sum(len(l2) for g in groups for l2 in g.l2_by_m.values())
    env.log(f"plan '{plan.mode}': {len(groups)} layer groups, {cases} (shape, E, M, L2) cases, "
            f"{len(kernels)} registered kernels, budget {budget:g} min")
    reserve = 0.0 if args.no_model else MODEL_RESERVE_MIN[plan.mode]
    final_deadline = env.deadline
    env.deadline -= 60.0 * reserve
    save = session.checkpoint_writer(args, rs, "results", env)
    rc = 0
    try:
        LayerRunner(env, plan, rs, kernels).run_groups(groups, save)
        if args.repeat_run:
            env.log("repeat run")
            LayerRunner(env, plan, rs, kernels, run=2).run_groups(groups, save)
        env.deadline = final_deadline
        if not args.no_model:
            bench_model.run_model(env, rs, plan.model_batches, plan.model_ks, plan.dtypes,
                                  shrink=rs.meta["shrink"])
    except CudaBroken as exc:
        rs.note(str(exc))
        env.log(f"stopped: {exc}")
        rc = 3
    session.finish_meta(rs, env)
    if env.truncated:
        env.log("time budget reached: results are partial (raise --max-minutes)")
    session.write_outputs(args, rs, "results")
    print()
    print(report_md.console_summary(rs))
    model = report_md.model_section(rs, l2s=("cold",))
    if model:
        print("\n".join(model[4:]))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
