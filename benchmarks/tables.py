"""Table contents from a ResultSet: which rows and columns, Best, vs fp16, and block totals.

Shared by the Markdown report, the console summary and the plots (no formatting here)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from . import shapes as S
from .results import OK, Record, ResultSet

FLOOR = "floor"


@dataclass(frozen=True)
class Row:
    shape: str
    experts: int
    m: int
    k: Optional[int]

    def label(self, dims: Dict[str, Tuple[int, int]]) -> str:
        kdim, n = dims.get(self.shape, (0, 0))
        return f"{self.shape} ({self.experts} x {kdim}x{n})" if self.experts else f"{self.shape} ({kdim}x{n})"


class View:
    """One (dtype, L2) slice of the results, as the report sees it."""

    def __init__(self, rs: ResultSet, dtype: str, l2: str, table: str = "layer", run: int = 1):
        self.rs, self.dtype, self.l2, self.table, self.run = rs, dtype, l2, table, run
        self.kinds = {name: fam for name, fam, _ in rs.meta.get("kernels", [])}
        self.order = [name for name, _, _ in rs.meta.get("kernels", [])]
        self.reference = "fp16" if dtype == "fp16" else "bf16"

    def get(self, kernel: str, row: Row) -> Optional[Record]:
        return self.rs.find(kernel, row.shape, row.experts, row.m, row.k, self.dtype, self.l2,
                            table=self.table, run=self.run)

    def time(self, kernel: str, row: Row, ok_only: bool = False) -> Optional[float]:
        rec = self.get(kernel, row)
        if rec is None or not rec.timed or (ok_only and rec.status != OK):
            return None
        return rec.median_us

    def columns(self, rows: List[Row]) -> List[str]:
        """Kernels with at least one timing among rows, in registry order (floor last, cold only)."""
        cols = [k for k in self.order if any(self.time(k, r) is not None for r in rows)]
        if self.l2 == "cold" and any(self.time(FLOOR, r) is not None for r in rows):
            cols.append(FLOOR)
        return cols

    def best(self, row: Row) -> Tuple[Optional[str], Optional[float]]:
        """The fastest correct kbit kernel for row."""
        cands = [(t, k) for k in self.order if self.kinds.get(k) == "kbit"
                 for t in [self.time(k, row, ok_only=True)] if t is not None]
        if not cands:
            return None, None
        t, k = min(cands)
        return k, t

    def speedup(self, row: Row) -> Optional[float]:
        _, best = self.best(row)
        ref = self.time(self.reference, row)
        return ref / best if best and ref else None


def plan_of(rs: ResultSet) -> Dict:
    return rs.meta["plan"]


def dims(rs: ResultSet) -> Dict[str, Tuple[int, int]]:
    return {r.shape: (r.K, r.N) for r in rs.records}


def measured_ms(rs: ResultSet, l2: str) -> List[int]:
    """The plan's M values with at least one layer timing at this L2 state."""
    seen = {r.m for r in rs.records if r.table == "layer" and r.l2 == l2 and r.timed and r.kernel != FLOOR}
    return [m for m in plan_of(rs)["ms"] if m in seen]


def per_m_rows(rs: ResultSet, m: int) -> List[Row]:
    """Rows of the per-M table: dense shapes then the table's MoE rows (E experts, m tokens each)."""
    plan = plan_of(rs)
    is_expert = {n: S.SHAPES[n].expert for n in plan["shapes"] if n in S.SHAPES}
    rows = [Row(n, 0, m, k) for n in plan["shapes"] if not is_expert.get(n) for k in plan["ks"]]
    if m <= plan["table_moe_max_m"]:
        rows += [Row(n, plan["table_experts"], m, k) for n in plan["shapes"] if is_expert.get(n)
                 for k in plan["ks"]]
    return rows


def sweep_rows(rs: ResultSet, k: int) -> List[Row]:
    plan = plan_of(rs)
    return [Row(n, e, m, k) for n in plan["shapes"] if n in S.SHAPES and S.SHAPES[n].expert
            for e in plan["sweep_experts"] for m in plan["sweep_ms"]]


@dataclass
class Total:
    block: str
    k: int
    sums: Dict[str, float]          # per column, where every member row has a timing
    best: Optional[float]
    reference: Optional[float]
    missing: List[str]

    @property
    def speedup(self) -> Optional[float]:
        return self.reference / self.best if self.best and self.reference else None


def block_totals(view: View, m: int, columns: List[str]) -> List[Total]:
    """Per block and k: the sum over the block's matmuls of each column and of Best."""
    plan = plan_of(view.rs)
    out = []
    for block, members in S.BLOCKS.items():
        missing = [name for name, _ in members if name not in plan["shapes"]]
        if any(S.SHAPES[name].expert for name, _ in members) and m > plan["table_moe_max_m"]:
            missing.append(f"MoE rows (m > {plan['table_moe_max_m']})")
        for k in plan["ks"]:
            rows = [(Row(name, plan["table_experts"] if S.SHAPES[name].expert else 0, m, k), times)
                    for name, times in members]
            sums = {}
            for col in columns:
                ts = [view.time(col, r, ok_only=view.kinds.get(col) == "kbit") for r, _ in rows]
                if not missing and all(t is not None for t in ts):
                    sums[col] = sum(t * n for t, (_, n) in zip(ts, rows))
            bests = [view.best(r)[1] for r, _ in rows]
            best = sum(b * n for b, (_, n) in zip(bests, rows)) if not missing and all(bests) else None
            out.append(Total(block, k, sums, best, sums.get(view.reference), missing))
    return out
