"""PNG plots from a ResultSet: speedup vs M per shape, % of copy bandwidth, and the MoE sweep."""
from __future__ import annotations

import math
import os
from typing import Callable, List, Optional, Tuple

from . import shapes as S
from .tables import Row, View, dims, measured_ms, plan_of

PEER_STYLES = {"int4": ("--", "gray"), "fp8": ("-.", "saddlebrown"), "gmm bf16": (":", "black")}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _grid(plt, n: int, title: str):
    cols = min(4, max(n, 1))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
    return fig, list(axes.flat[:n])


def _series(ms: List[int], value: Callable[[int], Optional[float]]) -> Tuple[List[int], List[float]]:
    pts = [(m, value(m)) for m in ms]
    pts = [(m, v) for m, v in pts if v is not None]
    return [m for m, _ in pts], [v for _, v in pts]


def _log2_axis(ax, ms: List[int], xlabel: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(ms)
    ax.set_xticklabels([str(m) for m in ms])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)


def _shape_rows(rs) -> List[Tuple[str, int]]:
    plan = plan_of(rs)
    names = [n for n in plan["shapes"] if n in S.SHAPES]
    return [(n, plan["table_experts"] if S.SHAPES[n].expert else 0) for n in names]


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no timings", ha="center", va="center", transform=ax.transAxes)


def _with_data(view: View, shapes: List[Tuple[str, int]], ks, ms: List[int]) -> List[Tuple[str, int]]:
    """Shapes with at least one timing in view (a cut-short run leaves some out)."""
    return [(n, e) for n, e in shapes
            if any(view.time(c, Row(n, e, m, k)) is not None for c in view.order for k in ks for m in ms)]


def _save(fig, path: str) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def speedup_plot(rs, dtype: str, l2: str, path: str) -> Optional[str]:
    plt, view, d, plan = _pyplot(), View(rs, dtype, l2), dims(rs), plan_of(rs)
    ms = measured_ms(rs, l2)
    shapes = _with_data(view, _shape_rows(rs), plan["ks"], ms)
    if not ms or not shapes:
        return None
    fig, axes = _grid(plt, len(shapes), f"speedup over cuBLAS {view.reference} ({dtype}, {l2} L2): "
                                        f"best kbit kernel per k; peers dashed")
    for ax, (name, e) in zip(axes, shapes):
        limit = plan["table_moe_max_m"] if e else max(ms)
        row_ms = [m for m in ms if m <= limit]
        for k in plan["ks"]:
            x, y = _series(row_ms, lambda m: view.speedup(Row(name, e, m, k)))
            if x:
                ax.plot(x, y, marker="o", label=f"kbit k={k}")
        for peer, (style, color) in PEER_STYLES.items():
            def peer_speedup(m, peer=peer):
                row = Row(name, e, m, plan["ks"][0])
                t, ref = view.time(peer, row), view.time(view.reference, row)
                return ref / t if t and ref else None
            x, y = _series(row_ms, peer_speedup)
            if x:
                ax.plot(x, y, linestyle=style, color=color, marker=".", label=peer)
        ax.axhline(1.0, color="black", linewidth=0.8)
        _log2_axis(ax, row_ms, "tokens per expert" if e else "M")
        ax.set_title(Row(name, e, 0, None).label(d), fontsize=9)
        ax.set_ylabel("x faster than cuBLAS")
        _legend(ax)
    return _save(fig, path)


def bandwidth_plot(rs, dtype: str, path: str) -> Optional[str]:
    plt, view, d, plan = _pyplot(), View(rs, dtype, "cold"), dims(rs), plan_of(rs)
    ms = measured_ms(rs, "cold")
    shapes = _with_data(view, _shape_rows(rs), plan["ks"], ms)
    copy = rs.meta["copy"]["gbps"]
    if not ms or not shapes:
        return None
    fig, axes = _grid(plt, len(shapes), f"% of copy bandwidth ({copy:.0f} GB/s), {dtype}, cold L2")
    for ax, (name, e) in zip(axes, shapes):
        limit = plan["table_moe_max_m"] if e else max(ms)
        row_ms = [m for m in ms if m <= limit]
        for k in plan["ks"]:
            def pct(m, k=k):
                best, _ = view.best(Row(name, e, m, k))
                rec = view.get(best, Row(name, e, m, k)) if best else None
                return 100 * rec.gbps / copy if rec is not None and rec.gbps else None
            x, y = _series(row_ms, pct)
            if x:
                ax.plot(x, y, marker="o", label=f"kbit k={k}")

        def ref_pct(m):
            rec = view.get(view.reference, Row(name, e, m, plan["ks"][0]))
            return 100 * rec.gbps / copy if rec is not None and rec.timed and rec.gbps else None
        x, y = _series(row_ms, ref_pct)
        if x:
            ax.plot(x, y, linestyle="--", color="gray", marker=".", label=f"cuBLAS {view.reference}")
        _log2_axis(ax, row_ms, "tokens per expert" if e else "M")
        ax.set_ylim(0, 110)
        ax.set_title(Row(name, e, 0, None).label(d), fontsize=9)
        ax.set_ylabel("% of copy bandwidth")
        _legend(ax)
    return _save(fig, path)


def sweep_plot(rs, dtype: str, l2: str, path: str) -> Optional[str]:
    plt, view, d, plan = _pyplot(), View(rs, dtype, l2), dims(rs), plan_of(rs)
    experts = [n for n in plan["shapes"] if n in S.SHAPES and S.SHAPES[n].expert]
    k = 4 if 4 in plan["ks"] else plan["ks"][-1]
    if not experts:
        return None
    drawn = False
    fig, axes = _grid(plt, len(experts), f"MoE: best kbit k={k} vs cuBLAS {view.reference} bmm "
                                         f"({dtype}, {l2} L2), one line per active-expert count")
    for ax, name in zip(axes, experts):
        for e in plan["sweep_experts"]:
            x, y = _series(list(plan["sweep_ms"]), lambda m: view.speedup(Row(name, e, m, k)))
            if x:
                drawn = True
                ax.plot(x, y, marker="o", label=f"E={e}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        _log2_axis(ax, list(plan["sweep_ms"]), "tokens per expert")
        ax.set_title(f"{name} ({d.get(name, (0, 0))[0]}x{d.get(name, (0, 0))[1]})", fontsize=9)
        ax.set_ylabel("x faster than cuBLAS")
        _legend(ax)
    if not drawn:
        plt.close(fig)
        return None
    return _save(fig, path)


def write_all(rs, folder: str, prefix: str) -> List[str]:
    """Every plot for rs into folder; returns the paths written (none if matplotlib is missing)."""
    try:
        _pyplot()
    except ImportError:
        print("matplotlib is not installed: no plots (pip install matplotlib)")
        return []
    os.makedirs(folder, exist_ok=True)
    out = []
    for dtype in plan_of(rs)["dtypes"]:
        for l2 in ("cold", "hot"):
            out.append(speedup_plot(rs, dtype, l2, os.path.join(folder, f"{prefix}speedup-{dtype}-{l2}.png")))
            out.append(sweep_plot(rs, dtype, l2, os.path.join(folder, f"{prefix}moe-sweep-{dtype}-{l2}.png")))
        out.append(bandwidth_plot(rs, dtype, os.path.join(folder, f"{prefix}bandwidth-{dtype}-cold.png")))
    return [p for p in out if p]
