"""What each mode measures, and the list of layer groups that follows from it.

A *group* is one weight (a dense [N, K] matrix, or a stack of E experts) with every token
count m it is timed at, and for each m which L2 states (cold always; hot at plan.hot_ms).
Groups run in order of importance, so a run cut short by its time limit keeps the Qwen rows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Dict, List, Tuple

import torch

from . import shapes as S

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


@dataclass(frozen=True)
class Plan:
    mode: str
    shapes: Tuple[str, ...]             # dense and expert shape names, in run order
    ms: Tuple[int, ...]                 # dense M (rows of A); also tokens/expert for the per-M MoE rows
    ks: Tuple[int, ...]
    dtypes: Tuple[str, ...]             # activation dtypes: "fp16", "bf16"
    hot_ms: Tuple[int, ...]             # M (or tokens/expert) also timed with a hot L2
    table_experts: int                  # E of the MoE rows in the per-M tables
    table_moe_max_m: int                # per-M tables show MoE rows up to this many tokens/expert
    sweep_experts: Tuple[int, ...]      # MoE sweep: active experts ...
    sweep_ms: Tuple[int, ...]           # ... times tokens per expert
    replays: int                        # graph replays per timing (median over these)
    min_calls: int                      # back-to-back calls per graph for short kernels
    max_minutes: float                  # stop timing (and write what we have) after this long
    model_batches: Tuple[int, ...]      # decode-step model benchmark
    model_ks: Tuple[int, ...]
    kernels: Tuple[str, ...] = ()       # registry names to run (empty: all)

    def to_json(self) -> Dict:
        return asdict(self)


FAST = Plan(
    mode="fast",
    shapes=("gateup", "down", "Q", "O", "KV", "moe_gu", "moe_dn", "llama8b_gu"),
    ms=(1, 4, 16, 64),
    ks=(2, 4),
    dtypes=("fp16",),
    hot_ms=(1,),
    table_experts=8,
    table_moe_max_m=64,
    sweep_experts=(8, 64),
    sweep_ms=(1, 4),
    replays=7,
    min_calls=32,
    max_minutes=1.0,
    model_batches=(1, 16),
    model_ks=(4,),
)

FULL = Plan(
    mode="full",
    shapes=("gateup", "down", "Q", "O", "KV", "moe_gu", "moe_dn",
            "glm_shared_gu", "glm_shared_dn", "glm_moe_gu", "glm_moe_dn",
            "llama8b_gu", "llama70b_gu"),
    ms=(1, 2, 3, 4, 8, 16, 32, 64, 128, 512),
    ks=(2, 3, 4, 5),
    dtypes=("fp16", "bf16"),
    hot_ms=(1, 4, 16, 64),
    table_experts=8,
    table_moe_max_m=64,
    sweep_experts=(8, 64, 256, 512),
    sweep_ms=(1, 2, 4, 8, 16, 32, 64),
    replays=15,
    min_calls=32,
    max_minutes=7.5,
    model_batches=(1, 4, 16, 32),
    model_ks=(2, 3, 4, 5),
)

MODES = {"fast": FAST, "full": FULL}


@dataclass
class Group:
    shape: S.Shape
    experts: int                        # 0 = dense
    l2_by_m: Dict[int, Tuple[str, ...]] = field(default_factory=dict)

    @property
    def ms(self) -> List[int]:
        return sorted(self.l2_by_m)


def groups(plan: Plan, shrink: int = 1) -> List[Group]:
    """Every layer group the plan times, Qwen first (the order of plan.shapes)."""
    def l2s(m: int) -> Tuple[str, ...]:
        return ("cold", "hot") if m in plan.hot_ms else ("cold",)

    out: List[Group] = []
    for name in plan.shapes:
        shape = S.get(name, shrink)
        if not shape.expert:
            out.append(Group(shape, 0, {m: l2s(m) for m in plan.ms}))
            continue
        per_e: Dict[int, set] = {}
        for m in plan.ms:
            if m <= plan.table_moe_max_m:
                per_e.setdefault(plan.table_experts, set()).add(m)
        for e in plan.sweep_experts:
            per_e.setdefault(e, set()).update(plan.sweep_ms)
        for e in sorted(per_e):
            out.append(Group(shape, e, {m: l2s(m) for m in sorted(per_e[e])}))
    return out


def with_overrides(plan: Plan, **kw) -> Plan:
    """plan with the given fields replaced (None values are ignored)."""
    return replace(plan, **{k: v for k, v in kw.items() if v is not None})
