"""Summarize Nsight Compute's per-SASS-instruction stall samples: the CSV of
`ncu --import X.ncu-rep --page source --csv --print-source sass` (a report taken with --section SourceCounters).

Groups the instructions by how often they ran (once per warp, per item, per unit... read off the counts against the
launch's warps and items), with each group's share of the samples and its top stall reasons, then lists the
instructions with the most samples.

    python3 scripts/ncu_sass_summary.py X-sass.csv [--top 25]      (an .xz file is read as is)
"""
import argparse
import collections
import csv
import io
import lzma


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--groups", type=int, default=14)
    a = p.parse_args()
    opener = lzma.open if a.csv.endswith(".xz") else open
    with opener(a.csv, "rt") as f:
        rows = list(csv.reader(io.StringIO(f.read())))
    header, data = rows[1], rows[2:]  # row 0 names the kernel
    col = {h: i for i, h in enumerate(header)}
    needed = ("Warp Stall Sampling (All Samples)", "Instructions Executed", "Source")
    if any(h not in col for h in needed):
        raise SystemExit(f"{a.csv}: expected the columns {needed} of `ncu --page source --csv` with SourceCounters; "
                         f"got {header[:8]}...")
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    samples = lambda r: number(r[col["Warp Stall Sampling (All Samples)"]])
    executed = lambda r: number(r[col["Instructions Executed"]])
    total = sum(samples(r) for r in data) or 1.0
    print(f"{rows[0][1][:150]}\n{total:.0f} samples over {len(data)} instructions")
    groups = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for r in data:
        g = groups[executed(r)]
        g[0] += 1
        g[1] += samples(r)
        for s in stalls:
            g[2][s] += number(r[col[s]])
    for count, (n, s, by) in sorted(groups.items(), key=lambda kv: -kv[1][1])[: a.groups]:
        top = ", ".join(f"{k[6:]} {v / total * 100:.1f}" for k, v in by.most_common(4))
        print(f"run {count:9.0f} times: {n:4d} instructions, {s / total * 100:5.1f}% of samples  [{top}]")
    print("the instructions with the most samples:")
    for r in sorted(data, key=lambda r: -samples(r))[: a.top]:
        top = sorted(((number(r[col[s]]), s[6:]) for s in stalls), reverse=True)[:3]
        why = ", ".join(f"{name} {v:.0f}" for v, name in top if v)
        print(f"{samples(r) / total * 100:5.1f}%  x{executed(r):8.0f}  {r[col['Source']].strip()[:60]:60s} {why}")


if __name__ == "__main__":
    main()
