"""kbit benchmark suite (see benchmarks/README.md).

    python -m benchmarks.run --mode fast|full [--out docs/benchmarks] [--dry-run]
"""
