"""Hugging Face transformers Qwen3-MoE model, 16-bit vs kbit k = 2..5: logits quality and decode speed.

Builds a ``Qwen3MoeForCausalLM`` from a config (no download) with random weights at a realistic
scale (N(0, 1/fan_in) matrices, experts and router, N(0, 1) embeddings, unit norms), in fp16 (or
``--dtype bf16``) on the GPU. For each k, a copy is converted with ``kbit.quantize_model`` (every
attention projection and the fused ``Qwen3MoeExperts`` of each layer; ``lm_head`` kept unless
``--quantize-lm-head``; embeddings, norms and routers stay 16-bit) and compared with the fp model:

* logits on ``--eval-batch`` x ``--eval-len`` random tokens (one forward): relative Frobenius
  error, top-1 agreement, mean KL(p_fp || p_kbit) in nats;
* decode speed, batch 1, greedy ``model.generate`` (eager PyTorch, HF's DynamicCache, no CUDA
  graphs) of ``--new-tokens`` tokens after a ``--prompt-len`` prompt: decode tokens/s =
  (N - 1) / (t(N new tokens) - t(1 new token)), so the prompt's prefill is not counted; also the
  end-to-end time. Median of ``--repeats`` after one warm-up. Host-bound at batch 1, and noisy;
* decode speed with a ``StaticCache``, one step captured as a CUDA graph and replayed back to back
  (the GPU's time a token; ``--compile``: the step through ``torch.compile(fullgraph=True)`` first;
  ``--no-graph`` skips it), also captured with kbit's PDL off, and the step's kernels by CUPTI.
  In fp16 the 16-bit model's step cannot be captured (its experts' ``torch._grouped_mm`` copies to
  the host outside bf16): use ``--dtype bf16`` to compare in graphs.

``--dense``: every layer a dense gated MLP of ``intermediate_size`` instead of experts (Qwen3MoeMLP); with
``--dims llama3-8b`` Llama-3 8B's sizes (a Llama-3 8B-like model in Qwen3's layer form). ``--fuse-projections``
then adds a row with q/k/v and gate/up fused and one with the MLPs as ``kbit.nn.GatedMLP``.

Default shape: Qwen3-Coder-Next-like dims (hidden 2048, 16 query heads and 2 KV heads of 256,
512 experts of intermediate 512, top-10, vocab 151936) with ``--layers 4`` (all full attention and
routed experts; no shared expert): ~7.2 B parameters, 14.4 GB in fp16.

    python -m benchmarks.bench_hf_model --dtype bf16 --out out/hf_model  # GPU (--compile: ~1 min more)
    python -m benchmarks.bench_hf_model --tiny --out /tmp/hf_tiny        # CPU smoke run, seconds

Writes ``hf_model.json`` and ``hf_model.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import statistics
from collections import Counter
import time
from typing import Dict, List, Optional

import torch

REALISTIC = dict(vocab_size=151936, hidden_size=2048, intermediate_size=5120, moe_intermediate_size=512,
                 num_attention_heads=16, num_key_value_heads=2, head_dim=256, num_experts=512,
                 num_experts_per_tok=10, norm_topk_prob=True, max_position_embeddings=4096)
TINY = dict(vocab_size=256, hidden_size=128, intermediate_size=128, moe_intermediate_size=64,
            num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_experts=8,
            num_experts_per_tok=2, norm_topk_prob=True, max_position_embeddings=256)
# --dims llama3-8b (with --dense): Llama-3 8B's attention and MLP sizes in Qwen3's layer (q/k norms)
LLAMA3_8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, moe_intermediate_size=512,
                 num_attention_heads=32, num_key_value_heads=8, head_dim=128, num_experts=8,
                 num_experts_per_tok=2, norm_topk_prob=True, max_position_embeddings=4096)
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def build_model(cfg_kw: Dict, layers: int, dtype: torch.dtype, device: torch.device, seed: int,
                experts_impl: Optional[str], dense: bool = False):
    import transformers

    # dense: every layer's MLP a dense gated one (Qwen3MoeMLP of intermediate_size, mlp_only_layers)
    cfg = transformers.Qwen3MoeConfig(num_hidden_layers=layers, tie_word_embeddings=False,
                                      mlp_only_layers=list(range(layers)) if dense else [], **cfg_kw)
    kw = {"experts_implementation": experts_impl} if experts_impl else {}
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kw)
    gen = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen, device=device, dtype=torch.float32))
            else:  # per output row at a time would be slower; fp32 randn of one tensor is fine
                p.copy_(torch.randn(p.shape, generator=gen, device=device, dtype=torch.float32)
                        .mul_(p.shape[-1] ** -0.5))
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def model_bytes(model) -> int:
    return sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))


def fmt_bytes(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


def fmt_count(n: int) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.2f} M"


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def quality(model, ref_logits: torch.Tensor, ids: torch.Tensor) -> Dict[str, float]:
    got = model(ids).logits.float()
    ref = ref_logits
    rel = ((got - ref).double().norm() / ref.double().norm()).item()
    top1 = (got.argmax(-1) == ref.argmax(-1)).double().mean().item()
    lp_ref, lp_got = torch.log_softmax(ref, -1), torch.log_softmax(got, -1)
    kl = (lp_ref.exp() * (lp_ref - lp_got)).sum(-1).mean().item()
    return {"logits_rel_err": rel, "top1_agreement": top1, "kl_nats": kl}


@torch.no_grad()
def decode_speed(model, prompt: torch.Tensor, new_tokens: int, repeats: int, device) -> Dict[str, float]:
    def run(n):
        sync(device)
        t = time.perf_counter()
        out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False)
        sync(device)
        assert out.shape[1] == prompt.shape[1] + n
        return time.perf_counter() - t, out

    run(new_tokens)  # warm-up (allocator, kernels, HF caches)
    t_n, t_1, tokens = [], [], None
    for _ in range(repeats):
        dt, out = run(new_tokens)
        t_n.append(dt)
        tokens = out[0, prompt.shape[1]:].tolist()
        t_1.append(run(1)[0])
    tn, t1 = statistics.median(t_n), statistics.median(t_1)
    return {"decode_tok_s": (new_tokens - 1) / max(tn - t1, 1e-9), "e2e_s": tn, "first_token_s": t1,
            "e2e_tok_s": new_tokens / tn, "tokens": tokens}


class _SyncDetector:
    """Counts the ops that would read a device tensor's value on the host, which a CUDA graph capture
    refuses: ``aten._local_scalar_dense`` (``.item()``, ``bool(t)``) and the ops whose output shape
    depends on values (``nonzero``, ``masked_select``, boolean-mask indexing through ``nonzero``).
    The CPU smoke run's check that a decode step would capture. It cannot see what only a CUDA path
    does (``.tolist()`` of a CPU tensor reads memory directly, and a CPU op has no copy to the host:
    the fp16 ``torch._grouped_mm`` fallback's copy shows on the GPU only)."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        detector = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func in detector.ops:
                    detector.reads += 1
                return func(*args, **(kwargs or {}))

        aten = torch.ops.aten
        self.ops = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default}
        self.reads, self.mode = 0, Mode()

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self.mode.__exit__(*exc)


@torch.no_grad()
def graph_decode_speed(model, prompt: torch.Tensor, new_tokens: int, repeats: int, device,
                       compile_step: bool = False) -> Dict:
    """Greedy decode with a ``StaticCache``, one decode step (forward, argmax into the next input,
    position + 1) captured as a CUDA graph and replayed ``new_tokens`` times back to back: the
    GPU's time a token with the host's launch costs gone (what a serving engine's graphs see).
    tok/s = new_tokens / (the replays' time by CUDA events), median of ``repeats``. On the CPU the
    step runs eagerly (a smoke run) and must not read a tensor's value on the host.
    ``compile_step``: the model's forward through ``torch.compile(fullgraph=True)`` first (inductor
    fuses the model's elementwise glue), compiled by a first step, then captured the same way."""
    from transformers import StaticCache

    P = prompt.shape[1]
    cache = StaticCache(config=model.config, max_cache_len=P + new_tokens)
    logits = model(prompt, past_key_values=cache, cache_position=torch.arange(P, device=device),
                   use_cache=True).logits
    first = logits[:, -1].argmax(-1, keepdim=True)
    tok, pos = first.clone(), torch.full((1,), P, dtype=torch.long, device=device)
    tokens = torch.zeros(new_tokens, dtype=torch.long, device=device)
    if compile_step:
        # A second model's compile of the same forward code found the first's cache entry and ran the outer
        # forward eagerly, compiling its modules' frames one by one (torch 2.11): each model from a clean cache.
        torch._dynamo.reset()
    forward = torch.compile(model.forward, fullgraph=True, dynamic=False) if compile_step else model.forward

    def step():  # the token generated at position pos - P ... (the first is the prefill's)
        tokens.index_copy_(0, pos - P, tok[0])
        out = forward(tok, past_key_values=cache, cache_position=pos, use_cache=True).logits
        tok.copy_(out[:, -1].argmax(-1, keepdim=True))
        pos.add_(1)

    # The static cache's layers count the positions written on the device (transformers 5.x: a layer's
    # cumulative_length, where its update writes), apart from cache_position: rewound with pos.
    lengths = [layer.cumulative_length for layer in getattr(cache, "layers", ())
               if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)]

    def reset():
        tok.copy_(first)
        pos.fill_(P)
        for n in lengths:
            n.fill_(P)

    compile_s = None
    if compile_step:  # the first call compiles
        t = time.perf_counter()
        step()
        sync(device)
        compile_s = time.perf_counter() - t
        reset()
    if device.type != "cuda":
        with _SyncDetector() as det:
            step()
        if det.reads:
            raise RuntimeError(f"a decode step read {det.reads} tensor value(s) on the host: no graph capture")
        reset()
        t = time.perf_counter()
        for _ in range(new_tokens):
            step()
        dt = time.perf_counter() - t
        return {"graph_tok_s": new_tokens / dt, "graph_tokens": tokens.tolist(), "graph": False,
                "compile_s": compile_s}
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):  # warm-up before the capture (allocator, lazy inits), off the capture's stream
        for _ in range(3):
            step()
    torch.cuda.current_stream(device).wait_stream(side)

    def capture(pdl: bool):
        # kbit's kernels take programmatic dependent launch (PDL) as a launch attribute, fixed at capture
        import kbit

        before = kbit._C.set_dependent_launch(pdl)
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
        finally:
            kbit._C.set_dependent_launch(before)
        return graph

    def seconds(graph) -> float:  # new_tokens replays back to back
        reset()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(new_tokens):
            graph.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    # Without PDL each kernel starts after the previous one ends, so the profile's durations are the kernels' own
    # (with PDL a kernel's duration includes its wait for the previous one); its step time is PDL's gain's measure.
    # The two graphs' runs alternate (each median of repeats after a warm-up of each), so drift hits both alike.
    graph, plain = capture(pdl=True), capture(pdl=False)
    times = {"pdl": [], "plain": []}
    plain_tokens = None
    for i in range(repeats + 1):
        for name, g in (("pdl", graph), ("plain", plain)) if i % 2 == 0 else (("plain", plain), ("pdl", graph)):
            times[name].append(seconds(g))
            if name == "plain":
                plain_tokens = tokens.tolist()
    t = statistics.median(times["pdl"][1:])
    seconds(graph)  # the tokens recorded are the PDL graph's
    result = {"graph_tok_s": new_tokens / t, "graph_step_us": t / new_tokens * 1e6, "graph_tokens": tokens.tolist(),
              "graph": True, "compile_s": compile_s,
              "graph_step_us_no_pdl": statistics.median(times["plain"][1:]) / new_tokens * 1e6}
    result["graph_no_pdl_same_tokens"] = plain_tokens == result["graph_tokens"]  # PDL changes no math
    result.update(step_kernels(plain, reset, min(new_tokens, 16)))
    return result


def step_kernels(graph, reset, replays: int, top: int = 12) -> Dict:
    """The GPU kernels of a captured decode step (captured without PDL), by CUPTI (torch.profiler) over
    ``replays`` replays: their count a step, device time a step (us, kernels only: the gaps between them
    are not counted), kbit's share (kernel names with "kbit") and the ``top`` kernels by time."""
    from torch.profiler import ProfilerActivity, profile

    reset()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in kernels) / replays
    kbit_us = sum(e.device_time_total for e in kernels if "kbit" in e.key) / replays
    by_time = sorted(kernels, key=lambda e: -e.device_time_total)[:top]
    return {"step_kernels": sum(e.count for e in kernels) / replays, "step_kernel_us": total,
            "step_kbit_kernel_us": kbit_us,
            "step_top_kernels": [{"name": e.key[:160], "per_step": e.count / replays,
                                  "us_per_step": e.device_time_total / replays} for e in by_time]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="out/hf_model")
    ap.add_argument("--tiny", action="store_true", help="tiny config on the CPU (smoke test)")
    ap.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    ap.add_argument("--layers", type=int, default=None, help="decoder layers (default 4; tiny 2)")
    ap.add_argument("--experts", type=int, default=None, help="override num_experts")
    ap.add_argument("--top-k", type=int, default=None, help="override num_experts_per_tok")
    ap.add_argument("--ks", default="2,3,4,5")
    ap.add_argument("--quantize-lm-head", action="store_true")
    ap.add_argument("--experts-impl", default=None,
                    help="transformers experts implementation of the fp model (eager, grouped_mm, "
                         "batched_mm; default: transformers')")
    ap.add_argument("--eval-batch", type=int, default=None, help="default 4 (tiny 2)")
    ap.add_argument("--eval-len", type=int, default=None, help="default 128 (tiny 32)")
    ap.add_argument("--prompt-len", type=int, default=None, help="default 32 (tiny 8)")
    ap.add_argument("--new-tokens", type=int, default=None, help="default 64 (tiny 8)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph decode (StaticCache)")
    ap.add_argument("--compile", action="store_true",
                    help="the graph decode's step through torch.compile(fullgraph=True) before its capture")
    ap.add_argument("--kbit-routers", action="store_true",
                    help="every model (the 16-bit one too) with its top-k routers swapped for kbit.router_topk "
                         "(kbit.integrations.routers.use_kbit_routers)")
    ap.add_argument("--fuse-projections", action="store_true",
                    help="also each kbit model with its q/k/v (and gate/up) projections fused into one kbit.Linear "
                         "(kbit.nn.fuse_projections(gated_mlp=False); a row 'kbit k=K fused' after each 'kbit k=K'), "
                         "and where it has gated MLPs, a row 'kbit k=K fused+gated' (the default gated_mlp=True: "
                         "kbit.nn.GatedMLP)")
    ap.add_argument("--dense", action="store_true",
                    help="every layer a dense gated MLP of intermediate_size (Qwen3MoeMLP; no experts)")
    ap.add_argument("--dims", choices=["qwen3-next", "llama3-8b"], default="qwen3-next",
                    help="the model's sizes (llama3-8b: hidden 4096, MLP 14336, 32 x 128 query heads, 8 KV heads, "
                         "vocab 128256; use with --dense)")
    ap.add_argument("--experts-routed", action="store_true",
                    help="kbit.Experts in its routed form at every size (SLOT_MAX_PAIRS = 0: no slot path at decode)")
    args = ap.parse_args(argv)

    import transformers
    import kbit
    if args.experts_routed:
        kbit.Experts.SLOT_MAX_PAIRS = 0

    tiny = args.tiny
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() and not tiny else "cpu"))
    dtype = DTYPES[args.dtype]
    cfg_kw = dict(TINY if tiny else LLAMA3_8B if args.dims == "llama3-8b" else REALISTIC)
    if args.experts:
        cfg_kw["num_experts"] = args.experts
    if args.top_k:
        cfg_kw["num_experts_per_tok"] = args.top_k
    layers = args.layers or (2 if tiny else 4)
    eval_batch, eval_len = args.eval_batch or (2 if tiny else 4), args.eval_len or (32 if tiny else 128)
    prompt_len, new_tokens = args.prompt_len or (8 if tiny else 32), args.new_tokens or (8 if tiny else 64)
    ks = [int(k) for k in args.ks.split(",") if k]
    skip = None if args.quantize_lm_head else ["lm_head"]
    os.makedirs(args.out, exist_ok=True)
    if device.type == "cuda" and not kbit.cuda_kernels_compiled():
        raise SystemExit("kbit was built without its CUDA kernels")

    t = time.perf_counter()
    fp = build_model(cfg_kw, layers, dtype, device, args.seed, args.experts_impl, args.dense)
    build_s = time.perf_counter() - t
    if args.kbit_routers:  # before the copies: every variant runs the same router code
        from kbit.integrations.routers import use_kbit_routers
        swap = use_kbit_routers(fp)
        print(swap, flush=True)
        if not swap.swapped or swap.declined:
            raise SystemExit("--kbit-routers: not every router was swapped")
    n_params = sum(p.numel() for p in fp.parameters())
    print(f"built {layers}-layer Qwen3-MoE{' (dense MLPs)' if args.dense else ''}, {fmt_count(n_params)} parameters, "
          f"{args.dtype}, on {device} "
          f"in {build_s:.1f} s (experts implementation: {fp.config._experts_implementation})", flush=True)
    gen = torch.Generator().manual_seed(args.seed + 1)
    vocab = cfg_kw["vocab_size"]
    eval_ids = torch.randint(0, vocab, (eval_batch, eval_len), generator=gen).to(device)
    prompt = torch.randint(0, vocab, (1, prompt_len), generator=gen).to(device)
    with torch.no_grad():
        ref_logits = fp(eval_ids).logits.float()

    rows: List[Dict] = []
    env = {"torch": torch.__version__, "transformers": transformers.__version__, "kbit": kbit.__version__,
           "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
           "python": platform.python_version()}

    def measure(name, model, k=None, summary=None, quant_s=None):
        row = {"variant": name, "k": k, "model_bytes": model_bytes(model), "quantize_s": quant_s}
        if device.type == "cuda":  # this model's peak (the 16-bit model stays resident throughout)
            torch.cuda.reset_peak_memory_stats(device)
        if k is not None:
            row.update(quality(model, ref_logits, eval_ids))
        row.update(decode_speed(model, prompt, new_tokens, args.repeats, device))
        if not args.no_graph:
            try:
                row.update(graph_decode_speed(model, prompt, new_tokens, args.repeats, device, args.compile))
            except RuntimeError as e:  # recorded; a kbit model's failure makes the exit status 1 (below)
                first_line = (str(e).strip().splitlines() or [""])[0][:300]
                row["graph_error"] = f"{type(e).__name__}: {first_line}" if first_line else type(e).__name__
                print(f"{name:>8}: graph decode failed: {row['graph_error']}", flush=True)
        if device.type == "cuda":
            row["max_memory_allocated"] = torch.cuda.max_memory_allocated(device)
        if summary is not None:
            row["summary"] = str(summary)
            row["converted_by_type"] = dict(Counter(summary.sources.values()))
            row["skipped"] = dict(summary.skipped)
        rows.append(row)
        q = (f"rel err {row['logits_rel_err']:.4f}, top-1 {row['top1_agreement']:.3f}, "
             f"KL {row['kl_nats']:.4f}; " if k is not None else "")
        g = f", graph {row['graph_tok_s']:.1f} tok/s" if "graph_tok_s" in row else ""
        print(f"{name:>8}: {q}decode {row['decode_tok_s']:.1f} tok/s{g}, model {fmt_bytes(row['model_bytes'])}",
              flush=True)

    measure(args.dtype, fp)
    for k in ks:
        model = copy.deepcopy(fp)
        sync(device)
        t = time.perf_counter()
        summary = kbit.quantize_model(model, k=k, skip=skip, progress=False)
        sync(device)
        quant_s = time.perf_counter() - t
        if k == ks[0]:
            print(summary, flush=True)
        measure(f"kbit k={k}", model, k, summary, quant_s)
        if args.fuse_projections:
            gated_model = copy.deepcopy(model) if args.dense else None
            fused = kbit.nn.fuse_projections(model, gated_mlp=False)
            print(fused, flush=True)
            if len(fused.fused) != layers * (2 if args.dense else 1) or fused.declined:
                raise SystemExit("--fuse-projections: not every layer's q/k/v (and gate/up) projections were fused")
            measure(f"kbit k={k} fused", model, k, summary, quant_s)
            if gated_model is not None:
                del model
                model = gated_model
                fused = kbit.nn.fuse_projections(model)
                print(fused, flush=True)
                if len(fused.gated_mlps) != layers or fused.declined:
                    raise SystemExit("--fuse-projections: not every layer's MLP became a kbit.nn.GatedMLP")
                measure(f"kbit k={k} fused+gated", model, k, summary, quant_s)
        del model
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()

    fp_row = rows[0]
    for row in rows:
        row["speedup_vs_fp"] = row["decode_tok_s"] / fp_row["decode_tok_s"]
        row["same_tokens_as_fp"] = common_prefix(row["tokens"], fp_row["tokens"])
        if "graph_tok_s" in row:
            row["graph_same_tokens_as_generate"] = common_prefix(row["graph_tokens"], row["tokens"])
        if "graph_tok_s" in row and "graph_tok_s" in fp_row:
            row["graph_speedup_vs_fp"] = row["graph_tok_s"] / fp_row["graph_tok_s"]
            row["graph_same_tokens_as_fp"] = common_prefix(row["graph_tokens"], fp_row["graph_tokens"])
    result = {"config": {"layers": layers, **cfg_kw, "dtype": args.dtype, "device": str(device),
                         "parameters": n_params, "lm_head_quantized": bool(args.quantize_lm_head),
                         "experts_implementation": fp.config._experts_implementation,
                         "eval_tokens": [eval_batch, eval_len], "prompt_len": prompt_len,
                         "new_tokens": new_tokens, "repeats": args.repeats, "seed": args.seed, "tiny": tiny,
                         "compile": bool(args.compile), "experts_routed": bool(args.experts_routed),
                         "kbit_routers": bool(args.kbit_routers), "fuse_projections": bool(args.fuse_projections),
                         "dense": bool(args.dense), "dims": "tiny" if tiny else args.dims},
              "env": env, "rows": rows}
    with open(os.path.join(args.out, "hf_model.json"), "w") as f:
        json.dump(result, f, indent=1)
    md = render_md(result)
    with open(os.path.join(args.out, "hf_model.md"), "w") as f:
        f.write(md)
    print(md)
    kbit_failed = [r["variant"] for r in rows if r["k"] is not None and "graph_error" in r]
    if kbit_failed:  # the 16-bit model's capture may fail (fp16's grouped_mm); kbit's must not
        print(f"graph decode failed for {', '.join(kbit_failed)}", flush=True)
        return 1
    return 0


def common_prefix(a: List[int], b: List[int]) -> int:
    """Length of the common prefix of two greedy continuations."""
    same = 0
    while same < len(a) and same < len(b) and a[same] == b[same]:
        same += 1
    return same


def render_md(result: Dict) -> str:
    c, env = result["config"], result["env"]
    mlp = (f"dense gated MLPs of intermediate {c['intermediate_size']}" if c.get("dense") else
           f"{c['num_experts']} experts of intermediate {c['moe_intermediate_size']}, top-{c['num_experts_per_tok']}")
    lines = [f"# Qwen3-MoE (transformers){' with dense MLPs' if c.get('dense') else ''}, {c['dtype']} vs kbit: "
             f"quality and decode speed", "",
             f"{c['layers']} layers, hidden {c['hidden_size']}, {c['num_attention_heads']} x {c['head_dim']} query "
             f"heads / {c['num_key_value_heads']} KV heads, {mlp}, vocab {c['vocab_size']}: "
             f"{fmt_count(c['parameters'])} parameters, random weights. Device: {env['device']} ({c['device']}); "
             f"torch {env['torch']}, transformers {env['transformers']}, kbit {env['kbit']}; fp experts "
             f"implementation `{c['experts_implementation']}`. lm_head "
             f"{'quantized' if c['lm_head_quantized'] else 'kept in ' + c['dtype']}."
             + (" Every model's top-k routers swapped for `kbit.router_topk`." if c.get("kbit_routers") else "")
             + (" Rows \"fused\": the kbit model above them with its q/k/v (and gate/up) projections fused "
                "(`kbit.nn.fuse_projections(gated_mlp=False)`); \"fused+gated\": also its MLPs as "
                "`kbit.nn.GatedMLP` (the gate/up call writes silu(gate) * up)." if c.get("fuse_projections") else ""),
             "",
             f"Logits: {c['eval_tokens'][0]} x {c['eval_tokens'][1]} random tokens, one forward. Decode: batch 1, "
             f"greedy `generate`, {c['prompt_len']}-token prompt, {c['new_tokens']} new tokens, eager PyTorch "
             f"(no CUDA graphs), median of {c['repeats']}; decode tok/s excludes the prefill. \"greedy tokens = "
             f"fp's\": length of the common prefix of the greedy continuation with the fp model's.", "",
             "| model | logits rel. err | top-1 agreement | KL (nats) | decode tok/s | vs fp | model size "
             "| greedy tokens = fp's | quantize s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        q = (f"{r['logits_rel_err']:.4f} | {r['top1_agreement']:.3f} | {r['kl_nats']:.4f}"
             if r["k"] is not None else "- | - | -")
        qs = f"{r['quantize_s']:.1f}" if r["quantize_s"] is not None else "-"
        lines.append(f"| {r['variant']} | {q} | {r['decode_tok_s']:.1f} | {r['speedup_vs_fp']:.2f}x | "
                     f"{fmt_bytes(r['model_bytes'])} | {r['same_tokens_as_fp']}/{len(r['tokens'])} | {qs} |")
    graph_rows = [r for r in result["rows"] if "graph_tok_s" in r or "graph_error" in r]
    if graph_rows:
        how = ("one decode step (forward" + (" through `torch.compile(fullgraph=True)`" if c.get("compile") else "")
               + ", argmax, position + 1) captured as a CUDA graph and replayed back to back"
               if graph_rows[0].get("graph", True) else "the same decode step run eagerly (no CUDA on this device)")
        timed = (f"median of {c['repeats']} after one warm-up; tok/s = tokens / the replays' time (CUDA events)"
                 if graph_rows[0].get("graph", True) else "timed once by the host's clock")
        lines += ["", f"Decode with a `StaticCache`: {how}, {c['new_tokens']} tokens after the "
                  f"{c['prompt_len']}-token prompt, {timed}. \"= fp's\": common prefix with the fp model's tokens "
                  f"so decoded; \"= generate's\": with the same model's `generate` tokens above. \"without PDL\": "
                  f"the step captured with kbit's programmatic dependent launch off; the kernel columns are that "
                  f"graph's, by CUPTI (each kernel's own duration; the gaps between kernels not counted).", "",
                  "| model | graph decode tok/s | us / token | without PDL | kernels a token | their time (us) "
                  "| kbit's (us) | vs fp | greedy tokens = fp's | = generate's |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in graph_rows:
            if "graph_tok_s" not in r:
                lines.append(f"| {r['variant']} | failed: {r['graph_error']} | | | | | | | | |")
                continue
            us = f"{r['graph_step_us']:.1f}" if "graph_step_us" in r else "-"
            us += f" | {r['graph_step_us_no_pdl']:.1f}" if "graph_step_us_no_pdl" in r else " | -"
            n = len(r["graph_tokens"])
            kern = (f"{r['step_kernels']:.0f} | {r['step_kernel_us']:.1f} | {r['step_kbit_kernel_us']:.1f}"
                    if "step_kernels" in r else "- | - | -")
            vs_fp = f"{r['graph_speedup_vs_fp']:.2f}x" if "graph_speedup_vs_fp" in r else "-"
            lines.append(f"| {r['variant']} | {r['graph_tok_s']:.1f} | {us} | {kern} | "
                         f"{vs_fp} | {r.get('graph_same_tokens_as_fp', '-')}/{n} | "
                         f"{r.get('graph_same_tokens_as_generate', '-')}/{n} |")
        for r in graph_rows:
            if r.get("step_top_kernels"):
                top = r["step_top_kernels"]
                short = [short_kernel_name(e["name"]) for e in top]
                # (a name that repeats, e.g. the GEMV's dense and grouped instantiations: its first template arguments)
                shown = [short_kernel_name(e["name"], with_arguments=short.count(n) > 1) for e, n in zip(top, short)]
                listed = "; ".join(f"`{n}` {e['per_step']:.0f} x {e['us_per_step'] / e['per_step']:.1f} us "
                                   f"({e['us_per_step']:.1f} a step)" for n, e in zip(shown, top))
                lines += ["", f"{r['variant']}, the kernels of a step by time (calls x time a call): {listed}."]
    return "\n".join(lines) + "\n"


def short_kernel_name(name: str, with_arguments: bool = False) -> str:
    """A kernel's name without its namespaces, template arguments and parameters (``void ns::f<...>(...)`` ->
    ``f``); ``with_arguments``: ``f<`` and its first four template arguments ``>``."""
    plain = name.replace("(anonymous namespace)::", "")
    head = plain.split("<")[0].split("(")[0].strip()
    base = head.split(" ")[-1].split("::")[-1] or name[:40]
    if with_arguments and "<" in plain:
        arguments = plain.split("<", 1)[1].split(">")[0].split(", ")[:4]
        base += "<" + ", ".join(a.split("::")[-1] for a in arguments) + ">"
    return base


if __name__ == "__main__":
    raise SystemExit(main())
