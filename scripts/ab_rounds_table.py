"""The rounds of a two-build A/B (scripts/gpu_build.sh's ab_alternate: scripts/probe_wgmma_build_ab.py JSONs labelled
base1, new1, base2, ...) as one table: per (k, shape, M) each build's times in round order and the ratio of the medians.

    python3 scripts/ab_rounds_table.py /tmp/ab_rounds/ab-*.json --json out/ab-all.json --md out/ab.md
"""
import argparse
import json
import statistics


def main():
    p = argparse.ArgumentParser()
    p.add_argument("jsons", nargs="+")
    p.add_argument("--json", help="write every round's rows here (a list of the probe's JSONs)")
    p.add_argument("--md", help="write the table here too")
    a = p.parse_args()
    runs = [json.load(open(f)) for f in sorted(a.jsons)]
    if a.json:
        json.dump(runs, open(a.json, "w"), indent=1)
    rows = {}
    for d in runs:
        build = d["label"].rstrip("0123456789")
        for r in d["rows"]:
            rows.setdefault((r.get("k", 4), r["shape"], r["M"]), {}).setdefault(build, []).append(r["us"])
    lines = ["| k | shape | M | base (us) | new (us) | new / base |", "|---|---|---|---|---|---|"]
    for (k, shape, m), v in rows.items():
        base, new = statistics.median(v.get("base", [0])), statistics.median(v.get("new", [0]))
        lines.append(f"| {k} | {shape} | {m} | {' / '.join(f'{x:.2f}' for x in v.get('base', []))} | "
                     f"{' / '.join(f'{x:.2f}' for x in v.get('new', []))} | {new / base if base else 0:.3f} |")
    text = "\n".join(lines) + "\n"
    if a.md:
        open(a.md, "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
