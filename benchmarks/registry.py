"""The kernel registry: how a kernel becomes a benchmark column.

A kernel joins with one decorated setup function (all of them live in kernels.py):

    @register("MMA", family=KBIT, per_k=True, requires=("kbit::mma_gemm",),
              applies=dense_only, doc="...")
    def mma(layer: Layer, lw: LayerWeights) -> Setup:
        qw = lw.quantized(layer.k)
        return Setup(weights=qw,
                     call=lambda w, inp: torch.ops.kbit.mma_gemm(inp.x, w.packed, ...),
                     reference=kbit_reference(layer, lw))

setup() runs once per layer (shape, E, k, dtype) and must not depend on M; `call(weights, inputs)`
is what gets timed (weights is one of the cold-L2 copies of `Setup.weights`), `prepare(inputs)`
converts the shared activations once per case outside the timed region, and `reference(inputs)`
returns the float32 result a correct kernel must match. A kernel whose `requires` ops are not
built for the device is skipped with that reason; an exception in setup or call skips the
affected cases with the message. Nothing else needs to change for a new column to appear.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .cases import Case, Inputs, Layer
from .ops import op_missing

#: Families: KBIT kernels compete for "Best"; the REFERENCE kernel of the activation dtype is the
#: "vs fp16" denominator; PEER kernels are other people's formats shown for comparison.
KBIT, REFERENCE, PEER = "kbit", "reference", "peer"

Requirement = Union[str, Callable[[torch.device], Optional[str]]]


@dataclass
class Setup:
    weights: Any                                     # tensor tree copied for cold-L2 rotation
    call: Callable[[Any, Any], torch.Tensor]         # (weights copy, prepared inputs) -> output
    reference: Callable[[Any], torch.Tensor]         # (prepared inputs) -> float32 expected output
    prepare: Callable[[Inputs], Any] = field(default=lambda inputs: inputs)
    note: str = ""


@dataclass(frozen=True)
class Kernel:
    name: str
    family: str
    doc: str
    setup: Callable[[Layer, Any], Setup]
    applies_fn: Callable[[Case], bool]
    requires: Callable[[Layer], Sequence[Requirement]]
    per_k: bool             # its weight format (and so its time) depends on k
    per_dtype: bool         # False: one timing serves the fp16 and bf16 tables (fixed own dtype)
    dtype: Optional[torch.dtype]  # reference kernels: the activation dtype they serve

    def applies(self, case: Case) -> bool:
        if self.dtype is not None and case.layer.dtype != self.dtype:
            return False
        return bool(self.applies_fn(case))

    def unavailable(self, layer: Layer, device: torch.device) -> Optional[str]:
        """None if runnable for layer on device, else the reason."""
        for req in self.requires(layer):
            why = op_missing(req, device) if isinstance(req, str) else req(device)
            if why:
                return why
        return None


_REGISTRY: Dict[str, Kernel] = {}


def register(name: str, *, family: str, doc: str, per_k: bool, per_dtype: bool = True,
             applies: Optional[Callable[[Case], bool]] = None,
             requires: Union[Sequence[Requirement], Callable[[Layer], Sequence[Requirement]]] = (),
             dtype: Optional[torch.dtype] = None):
    """Decorator adding a setup function to the registry as column `name` (see module doc)."""
    if family not in (KBIT, REFERENCE, PEER):
        raise ValueError(f"unknown family {family!r}")
    if family == REFERENCE and dtype is None:
        raise ValueError("a reference kernel names the activation dtype it serves")
    req_fn = requires if callable(requires) else (lambda layer, r=tuple(requires): r)

    def deco(setup: Callable[[Layer, Any], Setup]):
        if name in _REGISTRY:
            raise ValueError(f"kernel {name!r} registered twice")
        _REGISTRY[name] = Kernel(name, family, doc, setup, applies or (lambda case: True), req_fn,
                                 per_k, per_dtype, dtype)
        return setup
    return deco


def unregister(name: str) -> None:
    """Remove a kernel (tests)."""
    _REGISTRY.pop(name, None)


def kernels(names: Sequence[str] = ()) -> List[Kernel]:
    """Registered kernels in column order (registration order), optionally only `names`."""
    importlib.import_module(__package__ + ".kernels")  # its decorators fill the registry
    if not names:
        return list(_REGISTRY.values())
    unknown = [n for n in names if n not in _REGISTRY]
    if unknown:
        raise SystemExit(f"unknown kernel(s) {unknown}; registered: {list(_REGISTRY)}")
    return [k for k in _REGISTRY.values() if k.name in names]


def get(name: str) -> Kernel:
    kernels()
    return _REGISTRY[name]


def reference_for(dtype: torch.dtype) -> Optional[Kernel]:
    return next((k for k in kernels() if k.family == REFERENCE and k.dtype == dtype), None)


def column_order() -> Dict[str, int]:
    return {k.name: i for i, k in enumerate(kernels())}


def describe() -> List[Tuple[str, str, str]]:
    """(name, family, doc) of every registered kernel."""
    return [(k.name, k.family, k.doc) for k in kernels()]
