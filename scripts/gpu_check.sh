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
arch=$(python3 -c "import torch; p = torch.cuda.get_device_capability(); print(f'{p[0]}{p[1]}' + ('a' if p[0] == 9 else ''))")
# Build with the system g++ where there is one: a compiler that links libstdc++
# statically into _C.so makes every C++ exception carrying a message crash the process
# (seen with /opt/gcc on the GPU machine; docs/build.md).
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++; fi
echo "== build for sm_${arch} with ${CXX:-default c++}"
start=$(date +%s)
KBIT_CUDA_ARCHS=${KBIT_CUDA_ARCHS:-$arch} python3 -m pip install --no-build-isolation --no-deps -q -e . \
  > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
echo "build took $(( $(date +%s) - start )) s on $(nproc) cores"
python3 -m kbit info
echo "== tests"
python3 -m pytest ${TESTS:-tests} -q ${PYTEST_STOP:--x} -rs 2>&1 | tee "$OUT/tests.log" | tail -25
test_rc=${PIPESTATUS[0]}
if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== benchmarks (${MODE:-fast})"
  python3 -m benchmarks.run --mode "${MODE:-fast}" --out "$OUT" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -60
fi
exit "$test_rc"
