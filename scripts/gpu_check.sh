#!/usr/bin/env bash
# One-shot GPU run (the device machine): build for this GPU, run the GPU test suite,
# then the benchmarks. Everything lands in ${OUT:-out}/ (logs, JSON, tables).
#   MODE=fast|full   benchmark mode (default fast)
#   TESTS=...        pytest selection (default: the whole suite)
#   PYTEST_STOP=...  how pytest stops (default -x; e.g. --maxfail=20)
#   SKIP_BENCH=1     tests only
#   BENCH_ARGS=...   extra arguments for benchmarks.run (e.g. --shapes, --ms, --no-model)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
. scripts/gpu_build.sh
build_tree . "$OUT/build.log" || exit 1
python3 -m kbit info
echo "== tests"
python3 -m pytest ${TESTS:-tests benchmarks/tests} -q ${PYTEST_STOP:--x} -rs 2>&1 | tee "$OUT/tests.log" | tail -25
test_rc=${PIPESTATUS[0]}
if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== benchmarks (${MODE:-fast})"
  python3 -m benchmarks.run --mode "${MODE:-fast}" --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -60
fi
exit "$test_rc"
