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
arch=$(python3 -c "import torch; p = torch.cuda.get_device_capability(); print(f'{p[0]}{p[1]}' + ('a' if p[0] == 9 else ''))")
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++; fi
build() {  # build and install the tree in $1 (editable: the last built tree is the one imported)
  local start=$(date +%s)
  (cd "$1" && KBIT_CUDA_ARCHS=${KBIT_CUDA_ARCHS:-$arch} python3 -m pip install --no-build-isolation --no-deps -q -e . \
    > "$OUT/build_$2.log" 2>&1) || { tail -40 "$OUT/build_$2.log"; return 1; }
  echo "== $2: built in $(( $(date +%s) - start )) s"
}
bench() {
  (cd "$1" && eval "$BENCH --out $OUT/$2" > "$OUT/ab_$2.log" 2>&1); tail -${TAIL:-40} "$OUT/ab_$2.log" | grep -v Warning
}
build "$root" new || exit 1
if [ -n "${TESTS-tests/test_cuda_gemm.py}" ]; then
  python3 -m pytest ${TESTS:-tests/test_cuda_gemm.py} -q -x 2>&1 | tee "$OUT/tests_new.log" | tail -3
fi
echo "== new"; bench "$root" new
build "$base" base || exit 1
echo "== base"; bench "$base" base
