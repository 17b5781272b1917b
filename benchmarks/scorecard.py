"""The issues' performance targets (#5 decode GEMV, #6 tensor-core GEMM, #7 dispatch) judged against benchmark runs.

Reads one or more `benchmarks.run` result files (their records merged; files that time the same case are refused)
and writes one Markdown table row per target cell: what the issue asks, what the run
measured (kbit's dispatcher, `kbit.gemm` / `kbit.grouped_gemm`, against the baseline timed in the same run), and
whether it holds. Cold L2, fp16 activations, k = 4 (--k judges another k against the same targets).

    python -m benchmarks.scorecard docs/benchmarks/<gpu>/<run>/results-full-*.json --anchors h100-anchors.md

--anchors adds, for the targets whose baseline is cuBLAS fp16 or bmm, the anchors file's fp16 time (the H100 the
issues name) over this run's kbit time. That is not a like-for-like ratio unless the run is on an H100: on another GPU
it shows how far a miss is the baseline's speed on that GPU.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from .results import ResultSet

LARGE = ("llama8b_gu", "llama70b_gu")
QWEN_DENSE = ("gateup", "down", "Q", "O")
DENSE = ("gateup", "down", "Q", "O", "KV", "glm_shared_gu", "glm_shared_dn", "llama8b_gu", "llama70b_gu")


@dataclass(frozen=True)
class Target:
    issue: int
    what: str                 # the issue's words for the group of cells
    shape: str
    experts: int              # 0: dense
    m: int                    # rows, or tokens per expert
    baseline: str             # the registry column kbit is compared with: "fp16" (bmm for experts), "int4", "fp8"
    at_least: float           # baseline time / kbit time must be >= this (> with strict)
    k: int = 4
    strict: bool = False      # "faster than": a tie does not hold
    asked: str = ""           # what the table says is asked (default: the ratio)


@dataclass(frozen=True)
class FallsWithK:
    """#5: kbit's time at k = 2 < 3 < 4 < 5 on one (dense) cell."""
    issue: int
    what: str
    shape: str
    m: int
    experts: int = 0
    baseline: str = "k"       # (what an unmeasured cell is listed with: kbit at every k)


def targets(dense_ms: Sequence[int], k: int = 4) -> List[object]:
    """Every target cell of issues #5-#7; #7's "no M slower than cuBLAS fp16 by more than 10%" at each M of
    dense_ms (the run's) on every benchmark shape. The issues name k = 4; k: judge another k's kbit against the same
    targets (time falling with k is about every k, so it is kept whatever k is)."""
    out: List[object] = []
    upto32 = sorted({m for m in dense_ms if m <= 32} | {1, 2, 4, 8, 16, 32})
    from8to16 = sorted({m for m in dense_ms if 8 <= m <= 16} | {8, 16})
    for s in LARGE:
        out.append(Target(5, "M = 1, large shapes: >= 3.0x cuBLAS fp16", s, 0, 1, "fp16", 3.0))
    for s in QWEN_DENSE:
        out.append(Target(5, "M = 1, Qwen3 dense shapes: >= 2.0x cuBLAS fp16", s, 0, 1, "fp16", 2.0))
    for s in DENSE:
        for m in (1, 2, 3, 4):
            out.append(Target(5, "M = 1..4: faster than PyTorch int4 on every shape", s, 0, m, "int4", 1.0,
                              strict=True))
    for s in LARGE:
        out.append(Target(5, "M = 4, large shapes: >= 2.5x cuBLAS fp16", s, 0, 4, "fp16", 2.5))
    for s in LARGE:
        for m in (1, 2, 3, 4):
            out.append(FallsWithK(5, "time falls with k (k = 2 < 3 < 4 < 5), large shapes, M = 1..4", s, m))
    for s in ("moe_gu", "moe_dn"):
        out.append(Target(5, "MoE 8 experts x 1 token: >= 2.0x fp16 bmm", s, 8, 1, "fp16", 2.0))
        out.append(Target(5, "MoE 256 experts x 1 token: >= 3.0x fp16 bmm", s, 256, 1, "fp16", 3.0))
    for m, r in ((8, 2.5), (16, 2.2), (32, 1.8), (64, 1.5), (128, 1.0)):
        for s in LARGE:
            out.append(Target(6, f"large shapes, M = {m}: >= {r}x cuBLAS fp16", s, 0, m, "fp16", r))
    for s in LARGE:
        for m in upto32:
            out.append(Target(6, "large shapes, M <= 32: faster than fp8 row-wise _scaled_mm", s, 0, m, "fp8", 1.0,
                              strict=True))
    for s in QWEN_DENSE:
        for m in from8to16:
            out.append(Target(6, "Qwen3 dense shapes, M = 8..16: >= 1.5x cuBLAS fp16", s, 0, m, "fp16", 1.5))
    for s in ("moe_gu", "moe_dn"):
        out.append(Target(6, "MoE 64 experts x 8 tokens: >= 2.0x fp16 bmm", s, 64, 8, "fp16", 2.0))
        out.append(Target(6, "MoE 512 experts x 8 tokens: >= 1.5x fp16 bmm", s, 512, 8, "fp16", 1.5))
    for s in DENSE:
        for m in dense_ms:
            out.append(Target(7, "no M more than 10% slower than cuBLAS fp16", s, 0, m, "fp16", 1 / 1.1,
                              asked="kbit <= 1.10x fp16"))
    return [replace(t, k=k) if isinstance(t, Target) else t for t in out]


def load_anchors(path: str) -> Dict[Tuple[str, int, int], float]:
    """(shape, experts, m) -> the anchors file's cold fp16 time (us): its dense rows `| gateup (2048x5120) | 1 |
    9.74 | ...` and its MoE rows `| moe_gu (2048x512) | 8 | 1 | cold | 10.09 | ...`."""
    out: Dict[Tuple[str, int, int], float] = {}
    section = ""
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                section = line
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            m = re.fullmatch(r"(\w+) \((\d+)x(\d+)\)", cells[0]) if cells else None
            if not m:
                continue
            try:
                if "Dense layers, cold" in section:
                    out[(m.group(1), 0, int(cells[1]))] = float(cells[2])
                elif "MoE" in section and cells[3] == "cold":
                    out[(m.group(1), int(cells[1]), int(cells[2]))] = float(cells[4])
            except (IndexError, ValueError):
                continue
    return out


def merged(paths: Sequence[str]) -> ResultSet:
    """The files' records as one set. Files that time the same case are refused: a ratio is kbit's time over a
    baseline's from the same run, and a case from two runs (a peer timed in its own dtype by an fp16 and a bf16 run,
    say) would take one run's kbit and another's baseline."""
    sets = [ResultSet.load(p) for p in paths]
    by_key = {}
    for path, rs in zip(paths, sets):
        for r in rs.records:
            key = (r.run,) + r.key()
            if key in by_key:
                raise SystemExit(f"{path}: {r.case_label()} ({r.kernel}) is in an earlier file too: pass runs of "
                                 f"different cases")
            by_key[key] = r
    meta = dict(sets[-1].meta)
    gits = sorted({str(rs.meta.get("git", "?")) for rs in sets})
    devices = sorted({str(rs.meta.get("device", {}).get("name", "?")) for rs in sets})
    meta["git"] = ", ".join(gits)
    meta["device"] = dict(meta.get("device", {}), name=", ".join(devices))
    return ResultSet(meta, by_key.values())


def timed_us(rs: ResultSet, kernel: str, shape: str, experts: int, m: int, k: Optional[int] = None) -> Optional[float]:
    """The run's cold fp16 time of kernel on the cell (k: kbit's bit width; None for a baseline), or None where it
    has no correct timing."""
    rec = rs.find(kernel, shape, experts, m, k, "fp16", "cold")
    return rec.median_us if rec is not None and rec.status == "ok" else None


def label(shape: str, experts: int, m: int) -> str:
    return f"{shape} {experts} x {m}" if experts else f"{shape} M = {m}"


def judge(rs: ResultSet, t: object, anchors: Dict) -> Optional[Dict]:
    """One row for target t, or None where the run has no timing for its cells."""
    if isinstance(t, FallsWithK):
        times = [timed_us(rs, "kbit", t.shape, 0, t.m, k) for k in (2, 3, 4, 5)]
        if None in times:
            return None
        holds = all(a < b for a, b in zip(times, times[1:]))
        return {"issue": t.issue, "what": t.what, "cell": label(t.shape, 0, t.m), "asked": "k = 2 < 3 < 4 < 5",
                "kbit": " / ".join(f"{v:.2f}" for v in times), "base": "", "ratio": "", "holds": holds,
                "anchor": ""}
    ours = timed_us(rs, "kbit", t.shape, t.experts, t.m, t.k)
    base = timed_us(rs, t.baseline, t.shape, t.experts, t.m)
    if ours is None or base is None:
        return None
    ratio = base / ours
    anchor = anchors.get((t.shape, t.experts, t.m)) if t.baseline == "fp16" else None
    asked = t.asked or f"{'>' if t.strict else '>='} {t.at_least:.2f}x {t.baseline}"
    return {"issue": t.issue, "what": t.what, "cell": label(t.shape, t.experts, t.m),
            "asked": asked, "kbit": f"{ours:.2f}", "base": f"{base:.2f}",
            "ratio": f"{ratio:.2f}x", "holds": ratio > t.at_least if t.strict else ratio >= t.at_least,
            "anchor": f"{anchor:.2f} ({anchor / ours:.2f}x)" if anchor else ""}


def render(rs: ResultSet, anchors: Dict, k: int = 4) -> str:
    dense_ms = sorted({r.m for r in rs.records if r.kernel == "kbit" and r.experts == 0 and r.shape in DENSE})
    if rs.meta.get("shrink", 1) > 1:
        anchors = {}  # (a dry run's shapes are shrunk: the anchors' times are not theirs)
    rows, unmeasured = [], []
    for t in targets(dense_ms, k):
        row = judge(rs, t, anchors)
        if row is None:
            unmeasured.append(t)
        else:
            rows.append(row)
    dev = rs.meta.get("device", {}).get("name", "?")
    out = [f"# Issue targets against the run ({dev}, git {rs.meta.get('git', '?')})", "",
           f"kbit = kbit's dispatcher (kbit.gemm / kbit.grouped_gemm) at k = {k} (the issues' targets are k = 4's); "
           "fp16 activations, cold L2, CUDA-graph medians (us); ratio = baseline time / kbit time, from the same run."
           + (" H100 anchor: the anchors file's fp16 time and its ratio to this run's kbit time (not like for like "
              "on another GPU)." if anchors else ""), ""]
    for issue in (5, 6, 7):
        mine = [r for r in rows if r["issue"] == issue]
        absent = [t for t in unmeasured if t.issue == issue]
        held = sum(r["holds"] for r in mine)
        out += [f"## #{issue}: {held} of {len(mine)} cells hold", ""]
        if absent:
            out += [f"Not in the run (no timing of kbit or the baseline): "
                    + ", ".join(sorted({f"{label(t.shape, t.experts, t.m)} ({t.baseline})" for t in absent})) + ".", ""]
        missed = [r for r in mine if not r["holds"]]
        if issue == 7:  # many cells: the misses only
            mine = missed
            out += ["The cells that miss:", ""] if missed else ["Every cell holds.", ""]
            if not missed:
                continue
        head = "| target | cell | asked | kbit | baseline | ratio | holds |" + (" H100 anchor |" if anchors else "")
        out += [head, "|---" * (head.count("|") - 1) + "|"]
        for r in mine:
            line = (f"| {r['what']} | {r['cell']} | {r['asked']} | {r['kbit']} | {r['base']} | {r['ratio']} | "
                    f"{'yes' if r['holds'] else '**no**'} |")
            out.append(line + (f" {r['anchor']} |" if anchors else ""))
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="benchmarks.run JSON files (.json or .json.xz)")
    ap.add_argument("--anchors", help="the H100 anchors Markdown (/work/shared/design/h100-anchors.md)")
    ap.add_argument("--k", type=int, default=4, help="kbit's bit width judged (the issues name k = 4)")
    ap.add_argument("--out", help="write the Markdown here (default: print it)")
    a = ap.parse_args(argv)
    text = render(merged(a.results), load_anchors(a.anchors) if a.anchors else {}, a.k)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
