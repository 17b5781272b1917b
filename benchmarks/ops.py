"""Is an operator runnable on a device? (So registry entries skip cleanly when it is not.)"""
from __future__ import annotations

from typing import Optional

import torch

_COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")


def dispatch_key(device: torch.device) -> str:
    return "CUDA" if torch.device(device).type == "cuda" else "CPU"


def op_missing(qualified: str, device: torch.device) -> Optional[str]:
    """None when ``namespace::name`` exists and has a kernel for device; else the reason."""
    ns, name = qualified.split("::")
    if not hasattr(getattr(torch.ops, ns), name):
        return f"torch.ops.{ns}.{name} is not built"
    key = dispatch_key(device)
    for k in (key,) + _COMPOSITE_KEYS:
        if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, k):
            return None
    return f"torch.ops.{ns}.{name} has no {key} kernel in this build"


def has_kernel(qualified: str, device: torch.device) -> bool:
    return op_missing(qualified, device) is None


def schema_types(qualified: str) -> Optional[list]:
    """Types of the op's default overload's arguments without a default value, i.e. what a
    call must pass (None when the op does not exist): mma_gemm's optional tuning argument
    leaves it callable like gemm."""
    ns, name = qualified.split("::")
    if not hasattr(getattr(torch.ops, ns), name):
        return None
    return [str(a.type) for a in getattr(getattr(torch.ops, ns), name).default._schema.arguments
            if not a.has_default_value()]
