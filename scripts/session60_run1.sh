#!/usr/bin/env bash
# Session 60, run 1: session 59's final grouped-GEMV launch rule (0ee49a5) on the GPU: its MoE timings and then the
# grouped / moe / silu tests with the plan test's mirror (scripts/session59_rule_ab.sh new).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/session59_rule_ab.sh new
