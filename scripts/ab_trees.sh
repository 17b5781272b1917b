#!/usr/bin/env bash
# A/B of two source trees on the GPU machine: this checkout ("new") and a second tree at
# ${BASE_TREE:-ab_branch} ("base", e.g. `git archive <rev> | tar -x -C ab_branch`, carried to
# the device as an ignored path). Builds each for this GPU, runs TESTS (default
# tests/test_cuda_gemm.py) on the new tree, then the same benchmark command in both trees.
#   BENCH="python3 -m benchmarks.ab_paths --ops mma_gemm --shapes KV,gateup --ms 1,4 --ks 4"
# The benchmark gets --out $OUT/<tree>; logs in $OUT/ab_<tree>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
root=$(pwd)
base=$(cd "${BASE_TREE:-ab_branch}" && pwd)
. scripts/gpu_build.sh
bench() {
  (cd "$1" && eval "$BENCH --out $OUT/$2" > "$OUT/ab_$2.log" 2>&1); tail -${TAIL:-40} "$OUT/ab_$2.log" | grep -v Warning
}
build_tree "$root" "$OUT/build_new.log" || exit 1
if [ -n "${TESTS-tests/test_cuda_gemm.py}" ]; then
  python3 -m pytest ${TESTS:-tests/test_cuda_gemm.py} -q -x 2>&1 | tee "$OUT/tests_new.log" | tail -3
fi
echo "== new"; bench "$root" new
build_tree "$base" "$OUT/build_base.log" || exit 1
echo "== base"; bench "$base" base
