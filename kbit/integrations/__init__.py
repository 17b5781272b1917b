"""kbit.integrations: conversion of other libraries' module types by :func:`kbit.quantize_model`.

* :mod:`kbit.integrations.transformers` - Hugging Face transformers 5.x fused MoE experts
  (``Qwen3MoeExperts`` and the other ``gate_up_proj [E, 2I, H]`` / ``down_proj [E, H, I]``
  expert modules) -> :class:`kbit.integrations.transformers.HFExperts`.
* :mod:`kbit.integrations.routers` - their top-k softmax routers (``Qwen3MoeTopKRouter``, ...) ->
  :class:`kbit.integrations.routers.HFTopKRouter` on :func:`kbit.router_topk`, by an explicit
  :func:`kbit.integrations.routers.use_kbit_routers` (a speed patch: no weights change).

Importing kbit (or this package) never imports transformers: :func:`kbit.quantize_model` looks
for Hugging Face expert types in the model it is given (by their classes' module name) and
registers the converter for the ones it finds.
"""
from .routers import HFTopKRouter, use_kbit_routers
from .transformers import HFExperts, register_transformers_converters

__all__ = ["HFExperts", "register_transformers_converters", "HFTopKRouter", "use_kbit_routers"]
