"""Records (one timing or one skipped case each), the results file, and lookups for reports."""
from __future__ import annotations

import json
import lzma
import os
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

SCHEMA = "kbit-bench/1"

OK, WRONG, ERROR = "ok", "wrong", "error"


def open_record(path: str):
    """A record file opened for reading as text; PATH.xz decompressed (the large JSONs under docs/benchmarks/ are
    kept xz-compressed so the tree stays under the device run's 64 MiB cap)."""
    return lzma.open(path, "rt") if path.endswith(".xz") else open(path)


@dataclass
class Record:
    table: str                   # "layer" (run.py) or "model" (bench_model.py)
    kernel: str
    family: str
    shape: str
    K: int
    N: int
    experts: int                 # 0 = dense
    m: int                       # rows (dense) or tokens per expert (MoE) or batch (model)
    tokens: int
    k: Optional[int]             # None: the kernel's format does not depend on k
    dtype: Optional[str]         # "fp16"/"bf16"; None: the kernel always runs in its own dtype
    l2: str                      # "cold" or "hot"
    status: str                  # ok / wrong / error
    run: int = 1                 # 2 for the --repeat-run pass
    rel_err: Optional[float] = None
    error: str = ""
    median_us: Optional[float] = None
    p10_us: Optional[float] = None
    p90_us: Optional[float] = None
    spread: Optional[float] = None
    samples_us: List[float] = field(default_factory=list)
    calls: Optional[int] = None
    replays: Optional[int] = None
    copies: Optional[int] = None
    method: str = ""
    weight_bytes: Optional[int] = None
    bytes: Optional[int] = None
    gbps: Optional[float] = None
    note: str = ""
    sm_mhz: Optional[int] = None   # the SM clock after the timed replays (harness.Timing)
    settle_ms: float = 0.0         # waited for power / thermal clock limits to lift before them

    @property
    def timed(self) -> bool:
        return self.median_us is not None and self.status in (OK, WRONG)

    def case_label(self) -> str:
        """e.g. 'moe_gu E=8 m=4 k=4 fp16 cold' (parts that do not apply are left out)."""
        parts = [self.shape] + ([f"E={self.experts}"] if self.experts else []) + [f"m={self.m}"]
        parts += ([f"k={self.k}"] if self.k is not None else []) + ([self.dtype] if self.dtype else []) + [self.l2]
        return " ".join(parts)

    def key(self) -> Tuple:
        return (self.table, self.kernel, self.shape, self.experts, self.m, self.k, self.dtype, self.l2)


def _rounded(rec: Dict) -> Dict:
    """Timings to 1 ns: smaller digits are noise and only bloat the file."""
    out = dict(rec)
    out["samples_us"] = [round(v, 3) for v in rec.get("samples_us", [])]
    for key in ("median_us", "p10_us", "p90_us"):
        if out.get(key) is not None:
            out[key] = round(out[key], 4)
    return out


class ResultSet:
    """Records plus run metadata, with lookups that fall back to k=None / dtype=None rows."""

    def __init__(self, meta: Dict, records: Iterable[Record] = (), notes: Iterable[str] = ()):
        self.meta = meta
        self.records: List[Record] = list(records)
        self.notes: List[str] = list(notes)
        self._index: Optional[Dict[Tuple, Record]] = None

    def add(self, rec: Record) -> None:
        self.records.append(rec)
        self._index = None

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def find(self, kernel: str, shape: str, experts: int, m: int, k: Optional[int], dtype: Optional[str],
             l2: str, table: str = "layer", run: int = 1) -> Optional[Record]:
        if self._index is None:
            self._index = {(r.run,) + r.key(): r for r in self.records}
        for kk in (k, None):
            for dd in (dtype, None):
                rec = self._index.get((run, table, kernel, shape, experts, m, kk, dd, l2))
                if rec is not None:
                    return rec
        return None

    def select(self, **match) -> List[Record]:
        return [r for r in self.records if all(getattr(r, a) == v for a, v in match.items())]

    def runs(self) -> List[int]:
        return sorted({r.run for r in self.records})

    # ---- files -------------------------------------------------------------------------------
    def to_json(self) -> Dict:
        return {"schema": SCHEMA, "meta": self.meta, "notes": self.notes,
                "records": [asdict(r) for r in self.records]}

    def save(self, path: str) -> None:
        """JSON with one record per line (diff-friendly), written atomically."""
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        data = self.to_json()
        records = data.pop("records")
        head = json.dumps(data, indent=1)[:-2]  # drop the closing "\n}"
        lines = [json.dumps(_rounded(r), separators=(",", ":")) for r in records]
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(head + ',\n "records": [\n' + ",\n".join(lines) + "\n ]\n}\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str) -> "ResultSet":
        with open_record(path) as f:
            data = json.load(f)
        if data.get("schema") != SCHEMA:
            raise SystemExit(f"{path}: not a {SCHEMA} results file")
        return cls(data["meta"], [Record(**r) for r in data["records"]], data.get("notes", []))
