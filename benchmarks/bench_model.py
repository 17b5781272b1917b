"""Decode-step model benchmark: one Qwen3-Coder-Next-style transformer block's weight matmuls.

Per block: Q (2048->4096), K and V (2048->512 each), O (4096->2048), the dense/shared gate_up
(2048->5120) and down (5120->2048), and the routed experts: every token picks `top_k` (10) of
`n_experts` (512) experts at random, tokens are sorted by expert, and the experts' gate_up
(2048->512 each) and down (512->2048 each) run as one grouped call over the whole expert stack.
**Matmuls only**: no attention, norms, activations or routing math; each matmul gets its own
random input of the right shape. The whole block is one timed call (CUDA graph replays, cold L2 =
whole-block copies rotating through >= 4x L2 of weights actually read, as in harness.py).

    python -m benchmarks.bench_model --mode fast|full [--dry-run]
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from . import registry
from . import shapes as S
from .cases import Case, Layer
from .check import is_correct, relative_error
from .harness import Work
from .measure import CudaBroken, Env, after_failure, failed, fill_timing, nbytes
from .plan import DTYPES, MODES
from .results import ERROR, OK, WRONG, Record, ResultSet
from .weights import CopyCache, LayerWeights, cold_copies, tree_nbytes

# (matmul, shape it uses) in execution order; expert shapes are routed through the expert stack.
BLOCK_MATMULS: List[Tuple[str, str]] = [
    ("Q", "Q"), ("K", "KV"), ("V", "KV"), ("O", "O"), ("gate_up", "gateup"), ("down", "down"),
    ("experts_gate_up", "moe_gu"), ("experts_down", "moe_dn"),
]
N_EXPERTS, TOP_K = 512, 10
DESCRIPTION = ("Matmuls only (no attention, norms or activations): Q, K, V, O, dense gate_up and down, "
               f"and {TOP_K} of {N_EXPERTS} routed experts per token (random routing) as grouped calls "
               "over the expert stack. `kbit` = kbit.gemm / kbit.grouped_gemm; fp16/bf16 = cuBLAS "
               "(torch.matmul; one matmul per active expert). Times in microseconds per block.")


def route(batch: int, n_experts: int, top_k: int, seed: int) -> Tuple[int, ...]:
    """Tokens per expert when each of `batch` tokens picks top_k distinct experts at random."""
    gen = torch.Generator().manual_seed(seed)
    picks = torch.rand(batch, n_experts, generator=gen).topk(top_k, dim=1).indices.flatten()
    return tuple(int(c) for c in torch.bincount(picks, minlength=n_experts).tolist())


@dataclasses.dataclass
class Matmul:
    name: str
    shape: S.Shape
    weights: LayerWeights


def build_matmuls(env: Env, shrink: int, n_experts: int) -> List[Matmul]:
    """One LayerWeights per matmul (K and V get distinct weights: a block never re-reads one)."""
    out = []
    for name, shape_name in BLOCK_MATMULS:
        shape = dataclasses.replace(S.get(shape_name, shrink), name=name)
        out.append(Matmul(name, shape, LayerWeights(shape, n_experts if shape.expert else 0, env.device)))
    return out


def variants(dtype: torch.dtype) -> List[str]:
    """Registry kernels compared per block: kbit's dispatcher and cuBLAS in the activation dtype."""
    ref = registry.reference_for(dtype)
    return ["kbit"] + ([ref.name] if ref else [])


def time_block(env: Env, kernel: registry.Kernel, k: Optional[int], dtype: torch.dtype,
               matmuls: List[Matmul], batches: Sequence[int], counts: Dict[int, Tuple[int, ...]],
               l2s: Sequence[str], rs: ResultSet, run: int) -> None:
    dname = {v: n for n, v in DTYPES.items()}[dtype]

    def record(batch: int, l2: str) -> Record:
        active = sum(1 for c in counts[batch] if c)
        return Record(table="model", kernel=kernel.name, family=kernel.family, shape="qwen3-block",
                      K=matmuls[0].shape.K, N=0, experts=len(counts[batch]), m=batch, tokens=batch,
                      k=k, dtype=dname, l2=l2, status=ERROR, run=run,
                      note=f"{active} active experts ({TOP_K}/token)")

    layers = [Layer(mm.shape, mm.weights.experts, k, dtype) for mm in matmuls]
    why = next((w for w in (kernel.unavailable(layer, env.device) for layer in layers) if w), None)
    if why:
        rs.note(f"model {kernel.name}: not run: {why}")
        return
    try:
        setups = [kernel.setup(layer, mm.weights) for layer, mm in zip(layers, matmuls)]
    except CudaBroken:
        raise
    except Exception as exc:  # noqa: BLE001
        msg = "setup: " + after_failure(env, exc)
        for b in batches:
            for l2 in l2s:
                rs.add(failed(record(b, l2), msg))
        return
    copies = CopyCache()
    for batch in batches:
        if env.out_of_time():
            break
        try:
            prepared, worst, io_bytes, read = check_block(layers, matmuls, setups, batch, counts[batch])
        except CudaBroken:
            raise
        except Exception as exc:  # noqa: BLE001
            msg = "check: " + after_failure(env, exc)
            for l2 in l2s:
                rs.add(failed(record(batch, l2), msg))
            continue
        for l2 in l2s:
            rec = record(batch, l2)
            rec.rel_err = worst
            try:
                n = cold_copies(read, env.l2_bytes) if l2 == "cold" else 1
                weight_sets = [copies.get(s.weights, n) for s in setups]
                work = Work(read + io_bytes, 0, label=f"model-{kernel.name}", hot=(l2 == "hot"))
                timing = env.timer.measure(block_calls(setups, weight_sets, prepared, n), work)
            except CudaBroken:
                raise
            except Exception as exc:  # noqa: BLE001
                rs.add(failed(rec, "timing: " + after_failure(env, exc)))
                continue
            rec.status = OK if is_correct(worst) else WRONG
            rs.add(fill_timing(rec, timing, work, n, read))
    copies.clear()


def check_block(layers, matmuls, setups, batch: int, counts: Tuple[int, ...]):
    """Inputs of every matmul at this batch, checked once against its reference.

    Returns (prepared inputs, worst relative error (NaN if any is non-finite or misshapen),
    activation + output bytes, weight bytes a block reads: whole dense weights, active experts only)."""
    prepared, worst, io_bytes, read = [], 0.0, 0, 0
    active = sum(1 for c in counts if c)
    for layer, mm, setup in zip(layers, matmuls, setups):
        case = Case(layer, max(counts), counts) if layer.moe else Case(layer, batch)
        inp = setup.prepare(mm.weights.inputs(case))
        out = setup.call(setup.weights, inp)
        err, _ = relative_error(out, setup.reference(inp))
        worst = err if err != err or worst != worst else max(worst, err)
        io_bytes += nbytes(inp.x) + nbytes(out)
        total = tree_nbytes(setup.weights)
        read += total * active // layer.experts if layer.moe else total
        prepared.append(inp)
    return prepared, worst, io_bytes, read


def block_calls(setups, weight_sets, prepared, n: int):
    """n callables, each running the whole block on its own copy of every weight."""
    def block(j: int):
        def run_block():
            for setup, copies, inp in zip(setups, weight_sets, prepared):
                setup.call(copies[j], inp)
        return run_block
    return [block(j) for j in range(n)]


def run_model(env: Env, rs: ResultSet, batches: Sequence[int], ks: Sequence[int], dtypes: Sequence[str],
              l2s: Sequence[str] = ("cold", "hot"), shrink: int = 1, n_experts: int = N_EXPERTS,
              run: int = 1) -> None:
    counts = {b: route(b, n_experts, TOP_K, seed=1000 + b) for b in batches}
    rs.meta["model"] = {"description": DESCRIPTION, "batches": list(batches), "ks": list(ks),
                        "n_experts": n_experts, "top_k": TOP_K, "matmuls": BLOCK_MATMULS}
    matmuls = build_matmuls(env, shrink, n_experts)
    for dname in dtypes:
        dtype = DTYPES[dname]
        for name in variants(dtype):
            kernel = registry.get(name)
            for k in (ks if kernel.per_k else [None]):
                if env.out_of_time():
                    return
                time_block(env, kernel, k, dtype, matmuls, batches, counts, l2s, rs, run)
                for mm in matmuls:
                    if k is not None:
                        mm.weights.release_k(k)
            for mm in matmuls:
                mm.weights.release(lambda key: isinstance(key, tuple) and key[0] == "dense")
        if env.device.type == "cuda":
            torch.cuda.empty_cache()
    env.log(f"[{env.elapsed():7.1f}s] model block: {sum(1 for r in rs.records if r.table == 'model')} records")


def main(argv=None) -> int:
    from . import session
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    session.add_common_args(ap)
    ap.add_argument("--batches", default=None, help="comma list (default: the mode's)")
    ap.add_argument("--ks", default=None)
    ap.add_argument("--dtypes", default=None)
    ap.add_argument("--l2", default="cold,hot")
    args = ap.parse_args(argv)
    plan = MODES[args.mode]
    ints = lambda s, d: tuple(int(v) for v in s.split(",")) if s else d  # noqa: E731
    batches, ks = ints(args.batches, plan.model_batches), ints(args.ks, plan.model_ks)
    dtypes = tuple(args.dtypes.split(",")) if args.dtypes else plan.dtypes
    env, rs = session.start(args, plan, args.max_minutes or 5.0, args.replays or plan.replays)
    rc = 0
    try:
        run_model(env, rs, batches, ks, dtypes, tuple(args.l2.split(",")), shrink=rs.meta["shrink"])
    except CudaBroken as exc:
        rs.note(str(exc))
        env.log(str(exc))
        rc = 3
    session.finish_meta(rs, env)
    session.write_outputs(args, rs, "model")
    from .report_md import model_section
    print("\n".join(model_section(rs)))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
