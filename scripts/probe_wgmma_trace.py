"""Where one wgmma_gemm call's time goes, per CTA (needs a build patched by scripts/wgmma_trace_patch.py): for each
shape and M (k = 4, fp16), a warm call, an L2 flush, then one traced call; prints the medians (and the slowest CTA)
of each interval in SM cycles, the SM clock (clock64 over globaltimer per CTA), the kernel's span (first entry to
last exit, globaltimer) and the CTAs' start spread.

    python scripts/probe_wgmma_trace.py --shapes Q,llama8b_gu --ms 16,64,128 [--aid wgmma_first_stage_alone=1] --out t.json

--diags 0,1,...: run each cell under each of scripts/wgmma_diag_patch.py's modes (a build with that patch too).
"""
from __future__ import annotations

import argparse
import json

import torch

import kbit
from benchmarks import shapes as S


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="Q")
    p.add_argument("--ms", default="64")
    p.add_argument("--aid", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--diags", default=None, help="wgmma_diag_patch.py modes, e.g. 0,1,2")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    # a cluster launched per cluster of work (the trace has one unit's slots a CTA), unless an aid says otherwise
    kbit._C._set_wgmma_grid_clusters(-1)
    for aid in a.aid:
        name, _, value = aid.partition("=")
        getattr(kbit._C, f"_set_{name}")(int(value))
    dev = torch.device("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = []
    for name in a.shapes.split(","):
        N, K = S.SHAPES[name].N, S.SHAPES[name].K
        qw = kbit.quantize(torch.randn(N, K, device=dev, dtype=torch.float16), k=4)
        for M, diag in [(m, d) for m in map(int, a.ms.split(",")) for d in (a.diags.split(",") if a.diags else [None])]:
            if diag is not None:
                kbit._C._wgmma_diag_set(int(diag))
            x = torch.randn(M, K, device=dev, dtype=torch.float16)
            args = (qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4)
            plan = dict(kbit._C._wgmma_launch_plan(M, N, K, 4))
            torch.ops.kbit.wgmma_gemm(x, *args)
            flush.fill_(1)
            kbit._C._wgmma_trace_reset()
            torch.ops.kbit.wgmma_gemm(x, *args)
            t = kbit._C._wgmma_trace_read()
            ctas = int(plan["grid_ctas"])  # (the launched CTAs: the trace's rows)
            t = t[:ctas].double()
            ok = t[:, 49] > 0
            t = t[ok]
            mhz = (t[:, 48] - t[:, 1]) / (t[:, 49] - t[:, 0]) * 1e3
            groups = int(t[:, 52].max())

            def med(col_a, col_b, rows=None):
                d = (t[:, col_b] - t[:, col_a]) if rows is None else (t[rows, col_b] - t[rows, col_a])
                return (float(d.median()), float(d.max())) if d.numel() else (float("nan"), float("nan"))

            own = t[:, 52]  # each CTA's groups (splits may differ by one): its own slots only
            iv = {"entry->cta_barrier": med(1, 2), "cta_barrier->table": med(2, 3), "table->group0_full": med(3, 4)}
            for j in range(1, min(groups, 40)):
                iv[f"group{j - 1}"] = med(3 + j, 4 + j, own > j)
            last = torch.zeros(t.shape[0], dtype=torch.double)
            for i in range(t.shape[0]):  # the last group's data to the loop's end, each CTA at its own last group
                last[i] = t[i, 44] - t[i, 3 + int(min(own[i], 40))]
            iv["last_group+drain"] = (float(last.median()), float(last.max()))
            iv["loop_end->epilogue"] = med(44, 45)
            split = t[:, 53] > 1  # each CTA's own splits: with the split tail, whole units' CTAs run one
            if split.any():
                iv["partials+cluster_sync"] = med(45, 47, split)
                iv["reduction"] = med(47, 51, split)
                iv["final_barrier"] = med(51, 48, split)
            if (~split).any():
                iv["y_stores"] = med(45, 48, ~split)
            iv["total"] = med(1, 48)
            span_us = float((t[:, 49].max() - t[:, 0].min()) / 1e3)
            start_spread_us = float((t[:, 0].max() - t[:, 0].min()) / 1e3)
            pdl = t[:, 50] - t[:, 1]
            row = {"shape": name, "M": M, "diag": diag, "plan": plan, "ctas_traced": int(ok.sum()), "groups_max": groups,
                   "sm_mhz_median": float(mhz.median()), "span_us": span_us, "start_spread_us": start_spread_us,
                   "pdl_wait_cycles_median": float(pdl[pdl > 0].median()) if (pdl > 0).any() else None,
                   "intervals_cycles_median_max": iv}
            rows.append(row)
            print(f"== {name} M={M}{'' if diag is None else f' diag {diag}'} plan {plan} traced {int(ok.sum())}/{ctas} CTAs, SM {float(mhz.median()):.0f} MHz, "
                  f"span {span_us:.2f} us, start spread {start_spread_us:.2f} us, PDL wait "
                  f"{row['pdl_wait_cycles_median']}", flush=True)
            for k_, (m_, x_) in iv.items():
                print(f"   {k_:28s} {m_:9.0f} (max {x_:9.0f})")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
