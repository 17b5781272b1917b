"""Hugging Face transformers Qwen3-MoE model, fp16 vs kbit k = 2..5: logits quality and decode speed.

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
  end-to-end time. Median of ``--repeats`` after one warm-up.

Default shape: Qwen3-Coder-Next-like dims (hidden 2048, 16 query heads and 2 KV heads of 256,
512 experts of intermediate 512, top-10, vocab 151936) with ``--layers 4`` (all full attention and
routed experts; no shared expert): ~7.2 B parameters, 14.4 GB in fp16.

    python -m benchmarks.bench_hf_model --out out/hf_model              # GPU
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
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def build_model(cfg_kw: Dict, layers: int, dtype: torch.dtype, device: torch.device, seed: int,
                experts_impl: Optional[str]):
    import transformers

    cfg = transformers.Qwen3MoeConfig(num_hidden_layers=layers, tie_word_embeddings=False, **cfg_kw)
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
    args = ap.parse_args(argv)

    import transformers
    import kbit

    tiny = args.tiny
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() and not tiny else "cpu"))
    dtype = DTYPES[args.dtype]
    cfg_kw = dict(TINY if tiny else REALISTIC)
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
    fp = build_model(cfg_kw, layers, dtype, device, args.seed, args.experts_impl)
    build_s = time.perf_counter() - t
    n_params = sum(p.numel() for p in fp.parameters())
    print(f"built {layers}-layer Qwen3-MoE, {fmt_count(n_params)} parameters, {args.dtype}, on {device} "
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
        if k is not None:
            row.update(quality(model, ref_logits, eval_ids))
        row.update(decode_speed(model, prompt, new_tokens, args.repeats, device))
        if device.type == "cuda":
            row["max_memory_allocated"] = torch.cuda.max_memory_allocated(device)
        if summary is not None:
            row["summary"] = str(summary)
            row["converted_by_type"] = dict(Counter(summary.sources.values()))
            row["skipped"] = dict(summary.skipped)
        rows.append(row)
        q = (f"rel err {row['logits_rel_err']:.4f}, top-1 {row['top1_agreement']:.3f}, "
             f"KL {row['kl_nats']:.4f}; " if k is not None else "")
        print(f"{name:>8}: {q}decode {row['decode_tok_s']:.1f} tok/s, model {fmt_bytes(row['model_bytes'])}",
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
        del model
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()

    fp_tok_s, fp_tokens = rows[0]["decode_tok_s"], rows[0]["tokens"]
    for row in rows:
        row["speedup_vs_fp"] = row["decode_tok_s"] / fp_tok_s
        same = 0  # length of the common prefix of the greedy continuations
        while same < len(fp_tokens) and same < len(row["tokens"]) and row["tokens"][same] == fp_tokens[same]:
            same += 1
        row["same_tokens_as_fp"] = same
    result = {"config": {"layers": layers, **cfg_kw, "dtype": args.dtype, "device": str(device),
                         "parameters": n_params, "lm_head_quantized": bool(args.quantize_lm_head),
                         "experts_implementation": fp.config._experts_implementation,
                         "eval_tokens": [eval_batch, eval_len], "prompt_len": prompt_len,
                         "new_tokens": new_tokens, "repeats": args.repeats, "seed": args.seed, "tiny": tiny},
              "env": env, "rows": rows}
    with open(os.path.join(args.out, "hf_model.json"), "w") as f:
        json.dump(result, f, indent=1)
    md = render_md(result)
    with open(os.path.join(args.out, "hf_model.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


def render_md(result: Dict) -> str:
    c, env = result["config"], result["env"]
    lines = [f"# Qwen3-MoE (transformers), {c['dtype']} vs kbit: quality and decode speed", "",
             f"{c['layers']} layers, hidden {c['hidden_size']}, {c['num_attention_heads']} x {c['head_dim']} query "
             f"heads / {c['num_key_value_heads']} KV heads, {c['num_experts']} experts of intermediate "
             f"{c['moe_intermediate_size']}, top-{c['num_experts_per_tok']}, vocab {c['vocab_size']}: "
             f"{fmt_count(c['parameters'])} parameters, random weights. Device: {env['device']} ({c['device']}); "
             f"torch {env['torch']}, transformers {env['transformers']}, kbit {env['kbit']}; fp experts "
             f"implementation `{c['experts_implementation']}`. lm_head "
             f"{'quantized' if c['lm_head_quantized'] else 'kept in ' + c['dtype']}.", "",
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
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
