"""kbit.nn.GatedMLP: a SwiGLU MLP ``down(silu(gate(x)) * up(x))`` whose gate/up call writes the activation itself.

A decoder's dense MLP (Llama's ``LlamaMLP``, Qwen3's ``Qwen3MLP``, a MoE model's shared expert, ...) computes
``down_proj(act_fn(gate_proj(x)) * up_proj(x))``. Fused by :func:`kbit.fuse_projections` into one gate/up GEMM it is
still three steps: the GEMM, the model's activation and product (one more kernel), the down GEMM. Here the gate and
up rows are held interleaved in 8s (each 16-row tile: the gate rows of 8 outputs, then their up rows; the layout
``kbit.Experts`` holds, ``GateUpBuffers``), so the decode GEMV's epilogue has an output's gate and up in one thread
and writes ``silu(gate) * up`` (``kbit::gemm_silu_and_mul``: one kernel at M = 1 on CUDA where the dispatch takes
the GEMV; elsewhere the GEMM, then ``kbit::silu_and_mul``, with the same bits).

Numerics: gate and up are rounded to the compute dtype as the GEMM's output is, then ``silu(gate) * up`` in fp32,
rounded once (the model's own code rounds ``silu(gate)`` and the product separately: within an ulp or two).

:func:`kbit.fuse_projections` builds it (``gated_mlp=True``, the default) in place of a module whose children
``gate_proj``, ``up_proj`` and ``down_proj`` are kbit.Linear layers and whose forward computes exactly that, checked
by running the module's own forward against a GatedMLP on small random members (:func:`gated_mlp_from`).

State dict: ``gate_up_proj.weight.*`` (the rows in the natural order, gate then up: the keys and values of
fuse_projections' plain ``gate_up_proj`` fusion) and ``down_proj.weight.*`` / ``down_proj.bias``.
"""
from __future__ import annotations

import copy
from typing import Optional, Tuple

import torch
from torch import nn

from .. import api
from ..quantized import QuantizedWeight
from .buffers import probe_dtype
from .experts import GateUpBuffers
from .linear import ACT_DTYPES, Linear, NotConvertible

__all__ = ["GatedMLP", "SiluGateUp", "gated_mlp_from", "VERIFY_RTOL"]

VERIFY_RTOL = 2e-2  # (kbit.integrations.transformers' tolerance: bf16 rounding ~6e-3, GELU for SiLU ~0.1)
_VERIFY_TOKENS = 8
_VERIFY_SCALES = (0.75, 3.0, 12.0)  # the pre-activations' std: where SiLU and GELU differ most, and clamps
_VERIFY_ROWS = 32  # the probe's intermediate size (one block)


class SiluGateUp(nn.Module):
    """``silu(x @ W_gate^T) * (x @ W_up^T)`` from one gate/up weight ``[2I, H]`` (rows ``0 : I`` the gate, ``I : 2I``
    the up projection in its state dict; interleaved in 8s in memory). ``forward(x [..., H]) -> [..., I]`` in the
    compute dtype ``dtype``, which x must have. ``weight``: :class:`kbit.nn.experts.GateUpBuffers`."""

    def __init__(self, qw: QuantizedWeight, dtype: torch.dtype):
        super().__init__()
        if len(qw.shape) != 2 or qw.shape[0] % 16:
            raise ValueError(f"kbit.nn.SiluGateUp: the gate/up weight must be [2I, H] with 2I a multiple of 16 (gate "
                             f"and up rows interleaved in 8s; got {tuple(qw.shape)})")
        if dtype not in ACT_DTYPES:
            raise TypeError(f"kbit.nn.SiluGateUp: the compute dtype must be torch.float16 or torch.bfloat16 "
                            f"(got {dtype})")
        self.in_features, self.out_features, self.dtype = qw.shape[1], qw.shape[0] // 2, dtype
        self.weight = GateUpBuffers.from_quantized(qw.to_layout("flat"))

    @property
    def k(self) -> int:
        return self.weight.k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype != self.dtype:
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"kbit.nn.SiluGateUp: x must be {self.dtype}, the layer's compute dtype (got {got})")
        qb = self._modules["weight"]
        b = qb._buffers
        return api.gemm_tiled(x, b["packed"], b["absmax"], b["row_scale"], b["codebook"], qb.k, qb.shape,
                              "GatedMLP", silu_and_mul=True)

    def __repr__(self) -> str:
        return f"{self._get_name()}({self.extra_repr()})"

    def extra_repr(self) -> str:
        nbytes = self.weight.nbytes
        return (f"in_features={self.in_features}, out_features={self.out_features} (silu(gate) * up of "
                f"{2 * self.out_features} rows), k={self.k}, dtype={str(self.dtype).replace('torch.', '')}, "
                f"size={nbytes / 2**20:.3f} MiB")

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        target = probe_dtype(fn, self.dtype)
        if target in ACT_DTYPES:
            self.dtype = target
        return self


class GatedMLP(nn.Module):
    """``down_proj(silu(gate_proj(x)) * up_proj(x))``: ``gate_up_proj`` a :class:`SiluGateUp`, ``down_proj`` a
    :class:`kbit.Linear` (with its bias, if any). ``forward(x [..., H]) -> [..., H_out]``. ``source`` names the
    module it replaced. Build with :func:`gated_mlp_from` (or :func:`kbit.fuse_projections`)."""

    source: str = ""

    def __init__(self, gate_up_proj: SiluGateUp, down_proj: Linear, source: str = ""):
        super().__init__()
        if down_proj.in_features != gate_up_proj.out_features or down_proj.dtype != gate_up_proj.dtype:
            raise ValueError(f"kbit.nn.GatedMLP: down_proj (in_features {down_proj.in_features}, "
                             f"{down_proj.dtype}) must take gate_up_proj's output ({gate_up_proj.out_features}, "
                             f"{gate_up_proj.dtype})")
        self.gate_up_proj, self.down_proj, self.source = gate_up_proj, down_proj, source

    @classmethod
    def from_members(cls, gate: Linear, up: Linear, down: Linear, source: str = "") -> "GatedMLP":
        """A GatedMLP over three kbit.Linear layers (gate and up without biases; not modified: the weights are
        copied). Raises NotConvertible where they do not fit together."""
        why = _why_not_members(gate, up, down)
        if why:
            raise NotConvertible(why)
        g, u = gate.weight.quantized().to_layout("flat"), up.weight.quantized().to_layout("flat")
        qw = QuantizedWeight(torch.cat([g.packed, u.packed]), torch.cat([g.absmax, u.absmax]),
                             torch.cat([g.row_scale, u.row_scale]), g.codebook.clone(), g.k,
                             (2 * g.shape[0], g.shape[1]), g.dtype, "flat")
        dn = Linear._from_quantized(down.weight.quantized().to_layout("tiled"), down.bias, down.dtype)
        return cls(SiluGateUp(qw, gate.dtype), dn, source)

    @property
    def k(self) -> int:
        return self.gate_up_proj.k

    @property
    def dtype(self) -> torch.dtype:
        return self.gate_up_proj.dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.gate_up_proj(x))

    def extra_repr(self) -> str:
        return f"source={self.source}" if self.source else ""


def _why_not_members(gate, up, down) -> Optional[str]:
    for name, m in (("gate_proj", gate), ("up_proj", up), ("down_proj", down)):
        if type(m) is not Linear:
            return f"{name} is {type(m).__name__}, not kbit.Linear"
        if m._forward_hooks or m._forward_pre_hooks:
            return f"{name} has forward hooks"
    if gate.bias is not None or up.bias is not None:
        return "gate_proj or up_proj has a bias (the gated epilogue adds none before the activation)"
    if (gate.in_features, gate.out_features) != (up.in_features, up.out_features):
        return f"gate_proj {gate.out_features} x {gate.in_features} and up_proj {up.out_features} x " \
               f"{up.in_features} differ"
    if gate.out_features % 8:
        return f"the intermediate size {gate.out_features} is not a multiple of 8 (gate and up rows interleave in 8s)"
    if down.in_features != gate.out_features:
        return f"down_proj takes {down.in_features} features, gate_proj gives {gate.out_features}"
    for n, m in (("up_proj", up), ("down_proj", down)):
        for what, a, b in (("k", gate.k, m.k), ("compute dtype", gate.dtype, m.dtype),
                           ("device", gate.weight.device, m.weight.device),
                           ("quantized weight dtype", gate.weight.weight_dtype, m.weight.weight_dtype)):
            if a != b:
                return f"gate_proj and {n} differ in {what} ({a} / {b})"
    a, b = gate.weight.codebook, up.weight.codebook
    if a.shape != b.shape or (a.device.type != "meta" and not torch.equal(a, b)):
        return "gate_proj and up_proj have different codebooks"
    if gate.weight.device.type == "meta":
        return "the layers are on the meta device (the forward check runs the module)"
    return None


def _rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    ref = ref.double()
    return ((got.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _probe_members(gate: Linear, down: Linear, gen: torch.Generator) -> Tuple[Linear, Linear, Linear]:
    """Small random gate, up and down layers (intermediate size one block) like the module's: the same k, codebook,
    compute dtype and device, gate / up rows of std 1 / sqrt(H) (a pre-activation of std |x|)."""
    H, H_out, dev = gate.in_features, down.out_features, gate.weight.device
    cb = gate.weight.codebook

    def layer(n, kdim):
        W = torch.randn(n, kdim, generator=gen) * kdim ** -0.5
        return Linear._from_quantized(api.quantize(W.to(dev), k=gate.k, codebook=cb), None, gate.dtype)

    return layer(_VERIFY_ROWS, H), layer(_VERIFY_ROWS, H), layer(H_out, _VERIFY_ROWS)


def _verify(module: nn.Module, gate: Linear, down: Linear) -> Optional[str]:
    """Why ``module``'s own forward is not down(silu(gate(x)) * up(x)), run with small random members in place of its
    own (a shallow copy; the module is not changed), against a GatedMLP over the same members; None where it is."""
    gen = torch.Generator().manual_seed(0)
    g, u, d = _probe_members(gate, down, gen)
    probe = copy.copy(module)
    probe._modules = dict(module._modules)
    probe._modules.update(gate_proj=g, up_proj=u, down_proj=d)
    mine = GatedMLP.from_members(g, u, d)
    name = type(module).__name__
    T = _VERIFY_TOKENS * len(_VERIFY_SCALES)
    scales = torch.tensor(_VERIFY_SCALES).repeat_interleave(_VERIFY_TOKENS)[:, None]
    x = (torch.randn(T, gate.in_features, generator=gen) * scales).to(gate.weight.device, gate.dtype)
    try:
        with torch.no_grad():
            ref = type(module).forward(probe, x)  # (no hooks: the module has none, checked before)
            got = mine(x)
    except Exception as e:  # noqa: BLE001 - any failure means we cannot vouch for the replacement
        return f"{name}: could not check kbit.nn.GatedMLP against its forward ({type(e).__name__}: {e})"
    if not isinstance(ref, torch.Tensor) or ref.shape != got.shape:
        return f"{name}: its forward returns {getattr(ref, 'shape', type(ref).__name__)}, GatedMLP {tuple(got.shape)}"
    err = max(_rel_err(a, b) for a, b in zip(got.split(_VERIFY_TOKENS), ref.split(_VERIFY_TOKENS)))
    if not err <= VERIFY_RTOL:
        return (f"{name}: its forward computes something else than down(silu(gate(x)) * up(x)) (relative "
                f"difference {err:.3g} on the same weights, tolerance {VERIFY_RTOL}): another activation or form")
    return None


def gated_mlp_from(module: nn.Module, source: Optional[str] = None) -> GatedMLP:
    """A :class:`GatedMLP` computing what ``module`` does: its children ``gate_proj``, ``up_proj`` and ``down_proj``
    kbit.Linear layers (gate and up without biases, intermediate size a multiple of 8, the same k, codebook, compute
    dtype and device) and its forward ``down_proj(silu(gate_proj(x)) * up_proj(x))``, checked by running it (see
    :func:`_verify`). ``module`` is not changed; the weights are copied. Raises :class:`kbit.nn.NotConvertible` with
    the reason otherwise."""
    mods = module._modules
    if not all(n in mods for n in ("gate_proj", "up_proj", "down_proj")):
        raise NotConvertible(f"{type(module).__name__} has no gate_proj, up_proj and down_proj children")
    if module._forward_hooks or module._forward_pre_hooks:
        raise NotConvertible(f"{type(module).__name__} has forward hooks")
    gate, up, down = mods["gate_proj"], mods["up_proj"], mods["down_proj"]
    why = _why_not_members(gate, up, down) or _verify(module, gate, down)
    if why:
        raise NotConvertible(why)
    return GatedMLP.from_members(gate, up, down, type(module).__name__ if source is None else source)
