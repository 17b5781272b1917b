"""The layer shapes we benchmark, and which of them make up one transformer block.

Convention (as in docs/h100-anchors): a shape is "K x N" for C[M, N] = A[M, K] @ W[N, K]^T,
so the weight is [N, K]. An expert shape is one expert's matrix; a MoE case stacks E of them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class Shape:
    name: str        # short row label, e.g. "gateup"
    model: str       # which model it comes from
    K: int           # input features (reduction dim)
    N: int           # output features
    expert: bool = False  # one expert of a MoE layer (benchmarked as a grouped E-expert stack)

    @property
    def dims(self) -> str:
        return f"{self.K}x{self.N}"

    def shrunk(self, factor: int) -> "Shape":
        """The same shape with K and N divided by factor (dry runs on the CPU)."""
        if factor <= 1:
            return self
        k = max(32, (self.K // factor) // 32 * 32)
        n = max(16, (self.N // factor) // 16 * 16)
        return replace(self, K=k, N=n)


QWEN = "qwen3-coder-next"
GLM = "glm-4.7-flash"
LLAMA = "llama-3"

SHAPES: Dict[str, Shape] = {s.name: s for s in [
    # Qwen3-Coder-Next (hidden 2048)
    Shape("gateup", QWEN, 2048, 5120),
    Shape("down", QWEN, 5120, 2048),
    Shape("Q", QWEN, 2048, 4096),
    Shape("O", QWEN, 4096, 2048),
    Shape("KV", QWEN, 2048, 512),
    Shape("moe_gu", QWEN, 2048, 512, expert=True),
    Shape("moe_dn", QWEN, 512, 2048, expert=True),
    # GLM-4.7-Flash
    Shape("glm_shared_gu", GLM, 2048, 10240),
    Shape("glm_shared_dn", GLM, 10240, 2048),
    Shape("glm_moe_gu", GLM, 2048, 1536, expert=True),
    Shape("glm_moe_dn", GLM, 1536, 2048, expert=True),
    # Llama-3 gate/up
    Shape("llama8b_gu", LLAMA, 4096, 14336),
    Shape("llama70b_gu", LLAMA, 8192, 28672),
    # lm_head (vocab x hidden): Qwen3's vocab at hidden 2048 (the HF Qwen3-MoE benchmark's), Llama-3 8B's, Qwen2.5-7B's
    Shape("qwen3_lm_head", QWEN, 2048, 151936),
    Shape("llama8b_lm_head", LLAMA, 4096, 128256),
    Shape("qwen25_7b_lm_head", "qwen2.5-7b", 3584, 152064),
]}


# One transformer block's weight matmuls: (shape name, how many times it runs per block).
# Expert shapes count as one grouped call over the table's E active experts.
BLOCKS: Dict[str, List[Tuple[str, int]]] = {
    QWEN: [("Q", 1), ("KV", 2), ("O", 1), ("gateup", 1), ("down", 1), ("moe_gu", 1), ("moe_dn", 1)],
}


def block_description(block: str, table_experts: int) -> str:
    parts = []
    for name, times in BLOCKS[block]:
        label = f"{name} (E={table_experts})" if SHAPES[name].expert else name
        parts.append(f"{times}x {label}" if times > 1 else label)
    return " + ".join(parts)


def label(shape: Shape, experts: int = 0) -> str:
    """Row label: 'gateup (2048x5120)' or 'moe_gu (8 x 2048x512)'."""
    if experts:
        return f"{shape.name} ({experts} x {shape.dims})"
    return f"{shape.name} ({shape.dims})"


def get(name: str, shrink: int = 1) -> Shape:
    try:
        return SHAPES[name].shrunk(shrink)
    except KeyError:
        raise SystemExit(f"unknown shape {name!r}; known: {', '.join(SHAPES)}") from None


def by_kind(names: List[str], shrink: int = 1) -> Tuple[List[Shape], List[Shape]]:
    """(dense shapes, expert shapes) among names, in the order given."""
    shapes = [get(n, shrink) for n in names]
    return [s for s in shapes if not s.expert], [s for s in shapes if s.expert]


def find(name: str, shapes: List[Shape]) -> Optional[Shape]:
    return next((s for s in shapes if s.name == name), None)
