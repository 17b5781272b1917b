"""The Markdown report (for people) from a ResultSet."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import compare
from . import shapes as S
from .results import ERROR, WRONG, ResultSet
from .tables import FLOOR, Row, View, block_totals, dims, measured_ms, per_m_rows, plan_of, sweep_rows

KeyCol = Tuple[str, Callable[[Row], str]]


def fmt_us(t: Optional[float]) -> str:
    if t is None:
        return "-"
    return f"{t:.1f}" if t >= 100 else f"{t:.2f}"


def fmt_x(x: Optional[float]) -> str:
    return f"{x:.2f}x" if x else "-"


def time_cell(view: View, kernel: str, row: Row) -> str:
    rec = view.get(kernel, row)
    if rec is None:
        return "-"
    if not rec.timed:
        return "err"
    text = fmt_us(rec.median_us)
    if rec.status == WRONG:
        text += " (wrong)"
    if rec.method == "eager":
        text += "*"
    return text


def gbps_cell(view: View, kernel: str, row: Row) -> str:
    rec = view.get(kernel, row)
    if rec is None or not rec.timed or rec.gbps is None:
        return "-" if rec is None else "err"
    return f"{rec.gbps:.0f}" + (" (wrong)" if rec.status == WRONG else "")


def md_table(header: Sequence[str], lines: List[List[str]], n_left: int) -> List[str]:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i < n_left else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return out


def time_table(view: View, rows: List[Row], key_cols: List[KeyCol], m_for_totals: Optional[int]) -> List[str]:
    cols = view.columns(rows)
    if not cols:
        return ["(no timings)"]
    header = [h for h, _ in key_cols] + cols + ["Best", f"vs {view.reference}"]
    lines = []
    for row in rows:
        if all(view.get(c, row) is None for c in cols):
            continue
        best, _ = view.best(row)
        lines.append([f(row) for _, f in key_cols] + [time_cell(view, c, row) for c in cols]
                     + [best or "-", fmt_x(view.speedup(row))])
    if m_for_totals is not None:
        for tot in block_totals(view, m_for_totals, cols):
            if tot.missing:
                continue
            lines.append([f"**TOTAL** {tot.block} k={tot.k}", str(tot.k)] + [""] * (len(key_cols) - 2)
                         + [fmt_us(tot.sums.get(c)) if c in tot.sums else "" for c in cols]
                         + [fmt_us(tot.best), fmt_x(tot.speedup)])
    return md_table(header, lines, len(key_cols))


def gbps_table(view: View, rows: List[Row], key_cols: List[KeyCol], copy_gbps: float) -> List[str]:
    cols = [c for c in view.columns(rows) if c != FLOOR]
    header = [h for h, _ in key_cols] + cols + ["Best", "Best % of copy"]
    lines = []
    for row in rows:
        if all(view.get(c, row) is None for c in cols):
            continue
        best, _ = view.best(row)
        rec = view.get(best, row) if best else None
        pct = f"{100 * rec.gbps / copy_gbps:.0f}%" if rec is not None and rec.gbps else "-"
        lines.append([f(row) for _, f in key_cols] + [gbps_cell(view, c, row) for c in cols] + [best or "-", pct])
    return md_table(header, lines, len(key_cols))


def header_section(rs: ResultSet) -> List[str]:
    meta, dev = rs.meta, rs.meta["device"]
    l2 = dev["l2_bytes"] / 2**20
    out = [f"# kbit benchmarks: {dev['name']} ({meta['plan']['mode']} mode)", ""]
    if meta.get("dry_run"):
        out += [f"**DRY RUN: fake timings on the CPU, shapes divided by {meta.get('shrink')}. "
                "Not a measurement.**", ""]
    if meta.get("truncated"):
        out += [f"**Truncated: stopped after {meta['plan']['max_minutes']} min; some cases were not timed.**", ""]
    out += [f"- Device: {dev['name']}, {dev['sms']} SMs, L2 {l2:.1f} MiB, compute capability {dev.get('capability')}",
            f"- Device-to-device copy: {meta['copy']['gbps']:.0f} GB/s (bytes read + written); floors use it",
            f"- torch {meta['torch']}, CUDA {meta['cuda']}, kbit {meta['kbit']}, git {meta['git']}",
            f"- Started {meta['started']}, took {meta.get('elapsed_s', 0):.0f} s; command: `{meta['command']}`",
            "",
            "Method: every time is the median over replays of a CUDA graph holding back-to-back calls, divided "
            "by the calls per graph (microseconds, lower is better). **Cold** L2: the calls rotate through "
            "copies of the weights totalling >= 4x L2 (a weight already larger than that is one copy); "
            "**hot**: one weight buffer. Activations are fresh N(0,1) values; every kernel's output is "
            "checked against a float32 reference first (relative error < 1e-2, else `(wrong)`). "
            "`*` = timed eagerly (not capturable in a graph), `err` = failed (see Errors), `-` = not "
            "applicable. Best = fastest correct kbit kernel; vs fp16 = cuBLAS time / Best.",
            ""]
    return out


def legend_section(rs: ResultSet) -> List[str]:
    out = ["## Columns", "", "| column | family | what it runs |", "|---|---|---|"]
    out += [f"| {n} | {fam} | {doc} |" for n, fam, doc in rs.meta.get("kernels", [])]
    out += [f"| {FLOOR} | bound | (kbit bytes at this k + activations + output) / copy bandwidth |", ""]
    if rs.notes:
        out += ["Notes:", ""] + [f"- {n}" for n in rs.notes] + [""]
    return out


def layer_sections(rs: ResultSet) -> List[str]:
    plan, d = plan_of(rs), dims(rs)
    keys: List[KeyCol] = [("shape (K x N)", lambda r: r.label(d)), ("k", lambda r: str(r.k))]
    blocks = "; ".join(f"{b}: {S.block_description(b, plan['table_experts'])}" for b in S.BLOCKS)
    out = []
    for dtype in plan["dtypes"]:
        for l2 in ("cold", "hot"):
            ms = measured_ms(rs, l2)
            if not ms:
                continue
            view = View(rs, dtype, l2)
            out += [f"## Layers: {dtype} activations, {l2} L2", "",
                    f"MoE rows: {plan['table_experts']} experts x M tokens each, one grouped call. "
                    f"TOTAL = one transformer block ({blocks}).", ""]
            for m in ms:
                out += [f"### M = {m} ({dtype}, {l2} L2)", ""]
                out += time_table(view, per_m_rows(rs, m), keys, m) + [""]
    return out


def sweep_sections(rs: ResultSet) -> List[str]:
    plan, d = plan_of(rs), dims(rs)
    keys: List[KeyCol] = [("experts x (K x N)", lambda r: r.label(d)), ("m", lambda r: str(r.m))]
    out = []
    for dtype in plan["dtypes"]:
        for l2 in ("cold", "hot"):
            view = View(rs, dtype, l2)
            for k in plan["ks"]:
                rows = sweep_rows(rs, k)
                if not any(view.get(c, r) for r in rows for c in view.order):
                    continue
                out += [f"## MoE sweep: E experts x m tokens each, k={k}, {dtype}, {l2} L2", ""]
                out += time_table(view, rows, keys, None) + [""]
    return out


def bandwidth_sections(rs: ResultSet) -> List[str]:
    plan, d = plan_of(rs), dims(rs)
    keys: List[KeyCol] = [("shape (K x N)", lambda r: r.label(d)), ("k", lambda r: str(r.k))]
    copy = rs.meta["copy"]["gbps"]
    out = []
    for dtype in plan["dtypes"]:
        view = View(rs, dtype, "cold")
        ms = measured_ms(rs, "cold")
        if not ms:
            continue
        out += [f"## Achieved bandwidth (GB/s): {dtype}, cold L2", "",
                f"GB/s = (weights in the kernel's own format + activations + output) / time; copy bandwidth "
                f"{copy:.0f} GB/s.", ""]
        for m in ms:
            out += [f"### M = {m} ({dtype}, cold L2, GB/s)", ""]
            out += gbps_table(view, per_m_rows(rs, m), keys, copy) + [""]
    return out


def spread_section(rs: ResultSet) -> List[str]:
    timed = [r for r in rs.records if r.timed and r.method != "computed" and r.spread is not None and r.run == 1]
    if not timed:
        return []
    out = ["## Timing spread", "", "(p90 - p10) / median over the replays of each timing.", "",
           "| kernel | timings | median spread | p90 spread | max spread | worst case |",
           "|---|---:|---:|---:|---:|---|"]
    for kernel in dict.fromkeys(r.kernel for r in timed):
        rs_k = [r for r in timed if r.kernel == kernel]
        sp = np.array([r.spread for r in rs_k]) * 100
        w = max(rs_k, key=lambda r: r.spread)
        out.append(f"| {kernel} | {len(rs_k)} | {np.median(sp):.1f}% | {np.percentile(sp, 90):.1f}% | "
                   f"{sp.max():.1f}% | {w.case_label()} |")
    return out + [""]


def repeat_section(rs: ResultSet) -> List[str]:
    pairs = compare.repeat_pairs(rs)
    if not pairs:
        return []
    return (["## Reproducibility (--repeat-run: the same plan timed twice in one process)", "",
             "|t2 / t1 - 1| over matching timings.", ""] + compare.markdown(compare.summarize(pairs)) + [""])


def model_section(rs: ResultSet, l2s: Sequence[str] = ("cold", "hot")) -> List[str]:
    recs = [r for r in rs.records if r.table == "model" and r.run == 1]
    if not recs:
        return []
    meta = rs.meta.get("model", {})
    out = ["## Decode step: one Qwen3-style block's matmuls (bench_model)", "",
           meta.get("description", ""), ""]
    routing = {r.m: r.note.split(";")[0] for r in recs if r.note}
    if routing:
        out += ["Routing: " + "; ".join(f"batch {b}: {routing[b]}" for b in sorted(routing)), ""]
    for dtype in dict.fromkeys(r.dtype for r in recs):
        for l2 in l2s:
            sel = [r for r in recs if r.dtype == dtype and r.l2 == l2]
            if sel:
                out += [f"### {dtype}, {l2} L2", ""] + model_table(sel, dtype) + [""]
    return out


def model_table(sel: List, dtype: str) -> List[str]:
    variants = list(dict.fromkeys(r.kernel for r in sel))
    base = "fp16" if dtype == "fp16" else "bf16"
    lines = []
    for batch in sorted({r.m for r in sel}):
        for k in sorted({r.k for r in sel if r.k is not None}):
            def get(v):
                return next((r for r in sel if r.kernel == v and r.m == batch and r.k in (k, None)), None)
            cells = []
            for v in variants:
                rec = get(v)
                cells.append("-" if rec is None else "err" if not rec.timed else
                             fmt_us(rec.median_us) + (" (wrong)" if rec.status == WRONG else ""))
            kb, ref = get("kbit"), get(base)
            sp = ref.median_us / kb.median_us if kb and ref and kb.timed and ref.timed else None
            lines.append([str(batch), str(k)] + cells + [fmt_x(sp)])
    return md_table(["batch", "k"] + variants + [f"kbit vs {base}"], lines, 2)


def errors_section(rs: ResultSet) -> List[str]:
    errs: Dict[Tuple[str, str], int] = {}
    for r in rs.records:
        if r.status == ERROR:
            errs[(r.kernel, r.error)] = errs.get((r.kernel, r.error), 0) + 1
    if not errs:
        return []
    out = ["## Errors", "", "| kernel | cases | error |", "|---|---:|---|"]
    out += [f"| {k} | {n} | {e.replace('|', '/')} |" for (k, e), n in errs.items()]
    return out + [""]


def render(rs: ResultSet) -> str:
    parts = (header_section(rs) + legend_section(rs) + layer_sections(rs) + sweep_sections(rs)
             + model_section(rs) + bandwidth_sections(rs) + spread_section(rs) + repeat_section(rs)
             + errors_section(rs))
    return "\n".join(parts) + "\n"


def console_summary(rs: ResultSet, m: int = 1) -> str:
    """The M=m cold table of the first dtype, plus block totals at every M: the lines worth seeing
    at the end of a run's output."""
    plan, d = plan_of(rs), dims(rs)
    dtype = plan["dtypes"][0]
    view = View(rs, dtype, "cold")
    keys: List[KeyCol] = [("shape (K x N)", lambda r: r.label(d)), ("k", lambda r: str(r.k))]
    out = [f"M = {m} ({dtype}, cold L2), microseconds:"] + time_table(view, per_m_rows(rs, m), keys, m)
    totals = []
    for mm in measured_ms(rs, "cold"):
        for tot in block_totals(view, mm, view.columns(per_m_rows(rs, mm))):
            if not tot.missing and tot.best:
                totals.append(f"  M={mm:<4} k={tot.k}: kbit best {fmt_us(tot.best)} us, {view.reference} "
                              f"{fmt_us(tot.reference)} us, {fmt_x(tot.speedup)}")
    if totals:
        out += ["", "Block TOTAL (cold):"] + totals
    return "\n".join(out)
