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
import itertools
from typing import Optional, Tuple

import torch
from torch import nn

from .. import api
from ..quantized import QuantizedWeight
from .convert import VERIFY_SCALES, VERIFY_TOKENS, relative_error
from .experts import GateUpBuffers
from .linear import ACT_DTYPES, FollowsDtypeCasts, Linear, NotConvertible, check_compute_dtype, why_not_fusable

__all__ = ["GatedMLP", "SiluGateUp", "gated_mlp_from", "VERIFY_RTOL"]

# The forward check's tolerance by compute dtype: both sides run the same quantized members, so what differs is the
# model's two roundings of silu(gate) * up against one (measured ~5e-4 in fp16, ~3e-3 in bf16); GELU for SiLU ~0.1.
VERIFY_RTOL = {torch.float16: 5e-3, torch.bfloat16: 1.5e-2}
_VERIFY_ROWS = 32  # the probe's intermediate size (one block)


class SiluGateUp(FollowsDtypeCasts, nn.Module):
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
        check_compute_dtype(x, self.dtype, "kbit.nn.SiluGateUp")
        qb = self._modules["weight"]
        b = qb._buffers
        return api.gemm_tiled(x, b["packed"], b["absmax"], b["row_scale"], b["codebook"], qb.k, qb.shape,
                              "nn.SiluGateUp", silu_and_mul=True)

    def __repr__(self) -> str:
        return f"{self._get_name()}({self.extra_repr()})"

    def extra_repr(self) -> str:
        nbytes = self.weight.nbytes
        return (f"in_features={self.in_features}, out_features={self.out_features} (silu(gate) * up of "
                f"{2 * self.out_features} rows), k={self.k}, dtype={str(self.dtype).replace('torch.', '')}, "
                f"size={nbytes / 2**20:.3f} MiB")


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
        """A GatedMLP over three kbit.Linear layers (gate and up without biases; not modified: the gate/up weight is
        copied, interleaved; down_proj's tensors are shared). Raises NotConvertible where they do not fit together."""
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
    why = why_not_fusable([("gate_proj", gate), ("up_proj", up)]) or \
        why_not_fusable([("down_proj", down)], same=("compute dtype", "device"), first=("gate_proj", gate))
    if why:
        return why
    if gate.bias is not None:
        return "gate_proj and up_proj have biases (the gated epilogue adds none before the activation)"
    if gate.out_features != up.out_features:
        return f"gate_proj has {gate.out_features} rows, up_proj {up.out_features}"
    if gate.out_features % 8:
        return f"the intermediate size {gate.out_features} is not a multiple of 8 (gate and up rows interleave in 8s)"
    if down.in_features != gate.out_features:
        return f"down_proj takes {down.in_features} features, gate_proj gives {gate.out_features}"
    if gate.weight.device.type == "meta":
        return "the layers are on the meta device (the forward check runs the module)"
    return None


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
    own (a shallow copy: the module is not changed; it holds no tensors of its own, checked before) against a
    GatedMLP over the same members, on x of 2 and 3 dimensions and on one token ([1, 1, H]); None where it is."""
    gen = torch.Generator().manual_seed(0)
    g, u, d = _probe_members(gate, down, gen)
    probe = copy.copy(module)
    probe._modules = dict(module._modules)
    probe._modules.update(gate_proj=g, up_proj=u, down_proj=d)
    mine = GatedMLP.from_members(g, u, d)
    name, H, n = type(module).__name__, gate.in_features, VERIFY_TOKENS
    scales = torch.tensor(VERIFY_SCALES).repeat_interleave(n)[:, None]
    x = (torch.randn(len(VERIFY_SCALES) * n, H, generator=gen) * scales).to(gate.weight.device, gate.dtype)
    tol = VERIFY_RTOL[gate.dtype]
    for xs in (x, x.view(len(VERIFY_SCALES), n, H), x[n:n + 1].view(1, 1, H)):
        try:
            with torch.no_grad():
                ref = type(module).forward(probe, xs)  # (no hooks or instance forward: checked before)
                got = mine(xs)
        except Exception as e:  # noqa: BLE001 - any failure means we cannot vouch for the replacement
            return f"{name}: could not check kbit.nn.GatedMLP against its forward ({type(e).__name__}: {e})"
        if not isinstance(ref, torch.Tensor) or ref.shape != got.shape:
            return (f"{name}: its forward returns {getattr(ref, 'shape', type(ref).__name__)} for x of shape "
                    f"{tuple(xs.shape)}, GatedMLP {tuple(got.shape)}")
        group = n if xs.numel() > H else 1  # (each scale's tokens on their own)
        err = max(relative_error(a, b) for a, b in zip(got.reshape(-1, group, got.shape[-1]),
                                                       ref.reshape(-1, group, ref.shape[-1])))
        if not err <= tol:
            return (f"{name}: its forward computes something else than down(silu(gate(x)) * up(x)) (relative "
                    f"difference {err:.3g} on the same weights for x of shape {tuple(xs.shape)}, tolerance {tol}): "
                    f"another activation or form")
    return None


def gated_mlp_from(module: nn.Module, source: Optional[str] = None) -> GatedMLP:
    """A :class:`GatedMLP` computing what ``module`` does: its children ``gate_proj``, ``up_proj`` and ``down_proj``
    kbit.Linear layers (gate and up without biases, intermediate size a multiple of 8, the same k, codebook, compute
    dtype and device; no other parameters or buffers, no hooks) and its forward ``down_proj(silu(gate_proj(x)) *
    up_proj(x))``, checked by running it (see :func:`_verify`). ``module`` is not changed; the gate/up weight is
    copied (interleaved), down_proj's tensors are shared. Raises :class:`kbit.nn.NotConvertible` with the reason
    otherwise."""
    mods, name = module._modules, type(module).__name__
    members = ("gate_proj", "up_proj", "down_proj")
    if not all(n in mods for n in members):
        raise NotConvertible(f"{name} has no gate_proj, up_proj and down_proj children")
    if module._forward_hooks or module._forward_pre_hooks:
        raise NotConvertible(f"{name} has forward hooks")
    if "forward" in module.__dict__:
        raise NotConvertible(f"{name} has a forward of its own set on the instance (e.g. by a hook library)")
    # (its own parameters and buffers, or its other children's: GatedMLP would drop them)
    own = [n for n, _ in itertools.chain(module.named_parameters(), module.named_buffers())
           if n.split(".", 1)[0] not in members]
    if own:
        raise NotConvertible(f"{name} has tensors GatedMLP does not hold ({', '.join(own[:4])})")
    gate, up, down = mods["gate_proj"], mods["up_proj"], mods["down_proj"]
    why = _why_not_members(gate, up, down) or _verify(module, gate, down)
    if why:
        raise NotConvertible(why)
    return GatedMLP.from_members(gate, up, down, name if source is None else source)
