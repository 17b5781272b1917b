#!/usr/bin/env bash
# One device run, its steps given on the command line (the `run` tool's command), in place of a script per run:
#   bash scripts/device_run.sh NAME 'STEP' ['STEP' ...]
# The preamble (scripts/gpu_build.sh's start_device_run: the carried build or a build here, OUT, LOGS,
# KBIT_BENCH_COMMIT), then each STEP in order: a shell command line run with gpu_build.sh's functions and
# R = this run's records directory (put every output there); then R goes back as $OUT/NAME.tar.xz. Each step's exit
# status and time are printed; a failing step does not stop the later ones. E.g.
#   bash scripts/device_run.sh run1 'pytest_step tests-gemm 300 tests/test_cuda_gemm.py -k wgmma' \
#     'OUT=$R sanitize_run memcheck 60 gemv-slots'
# (Sessions 43-69 wrote a scripts/sessionNN_runK.sh for every run, each repeating these lines around its steps.)
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 NAME 'STEP' ['STEP' ...]"; exit 2; }
name=$1
shift
. scripts/gpu_build.sh
start_device_run || exit 1
R=/tmp/records-$name
rm -rf "$R"
mkdir -p "$R"
export R
for step in "$@"; do
  echo "== $(date +%T) $step"
  # (a subshell without set -u: a step that exits or names an unset variable ends itself, not the run and its archive)
  (set +u; eval "$step")
  echo "== rc=$? $(date +%T)"
done
tar -C "$R" -cJf "$OUT/$name.tar.xz" .
