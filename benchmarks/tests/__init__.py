"""Benchmark-suite tests that need no GPU: dry runs end to end, formats, parsing, timer logic.

    pytest benchmarks/tests -q
"""
