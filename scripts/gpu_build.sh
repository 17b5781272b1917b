# Sourced by the GPU-machine scripts (gpu_check.sh, ab_trees.sh): build a source tree for this GPU.
#   build_tree DIR LOG   editable install of DIR (the last tree built is the one imported), output
#                        in LOG; prints the build time, or the log's tail and returns 1 on failure.
# Arch: this GPU's (90a on Hopper), unless KBIT_CUDA_ARCHS is set. Compiler: the system g++ where
# there is one: a compiler that links libstdc++ statically into _C.so makes every C++ exception
# carrying a message crash the process (seen with /opt/gcc on the GPU machine; docs/build.md).
gpu_arch=$(python3 -c "import torch; p = torch.cuda.get_device_capability(); print(f'{p[0]}{p[1]}' + ('a' if p[0] == 9 else ''))")
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++; fi
build_tree() {
  local start=$(date +%s)
  echo "== build $1 for sm_${KBIT_CUDA_ARCHS:-$gpu_arch} with ${CXX:-default c++}"
  (cd "$1" && KBIT_CUDA_ARCHS=${KBIT_CUDA_ARCHS:-$gpu_arch} python3 -m pip install --no-build-isolation --no-deps -q -e . \
    > "$2" 2>&1) || { tail -50 "$2"; return 1; }
  echo "built in $(( $(date +%s) - start )) s on $(nproc) cores"
}

# The sources the extension is built from, as one hash (scripts/build_py312.sh stamps its build with it).
source_stamp() { find csrc CMakeLists.txt pyproject.toml -type f | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-16; }

# A build made on the CPU machine for this Python (scripts/build_py312.sh), carried with the run:
# used where its stamp matches this tree's sources (PYTHONPATH = the tree), else returns 1.
# It travels xz-compressed (the tracked tree plus the 31 MB .so pass the run's 64 MiB cap).
use_carried_build() {
  local so=kbit/_C.cpython-312-x86_64-linux-gnu.so
  [ -f "$so.xz" ] && xz -d -k -f "$so.xz"
  [ -f "$so" ] && [ -f kbit/_C.stamp ] || return 1
  if [ "$(cat kbit/_C.stamp)" != "$(source_stamp)" ]; then
    echo "== carried build is stale: building here"; rm -f "$so"; return 1
  fi
  export PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
  # the carried file must be the one imported (an editable install's finder would come first)
  python3 -c "import os, sys, kbit; sys.exit(0 if kbit.cuda_kernels_compiled() and
os.path.samefile(kbit._C.__file__, '$so') else 1)" || { echo "== carried build not the one imported"; return 1; }
  echo "== using the carried build ($so, stamp $(cat kbit/_C.stamp))"
}

# The preamble of a device-run script (run from the repository root, after sourcing this file):
# OUT (default out) and LOGS (default /tmp/run_logs) made, KBIT_BENCH_COMMIT exported (default
# unknown: the benchmarks' records name it), unbuffered Python, this tree built (or its carried build
# used). A script needs no more than: set -uo pipefail; cd "$(dirname "$0")/.."; . scripts/gpu_build.sh;
# start_device_run || exit 1 (session 43: scripts up to it repeated these lines).
start_device_run() {
  OUT=${OUT:-out}; mkdir -p "$OUT"
  export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
  LOGS=${LOGS:-/tmp/run_logs}; mkdir -p "$LOGS"
  export PYTHONUNBUFFERED=1
  use_carried_build || build_tree "$(pwd)" /tmp/build.log
}

# Regenerate the dispatch table on this GPU: tune_dispatch into DIR (its log DIR.log), then copy its
# table over csrc/cuda/gemm/tc_dispatch_table.h and rebuild this tree (log DIR-build.log; the script
# exits if that build fails). Returns 1 when the sweep wrote no table (nothing copied or rebuilt).
tune_and_rebuild() {
  mkdir -p "$1"
  timeout ${TUNE_TIMEOUT:-420} python3 -m benchmarks.tune_dispatch --out "$1" > "$1.log" 2>&1; tail -2 "$1.log" | cut -c1-300
  [ -s "$1/tc_dispatch_table.h" ] || return 1
  cp "$1/tc_dispatch_table.h" csrc/cuda/gemm/tc_dispatch_table.h
  build_tree "$(pwd)" "$1-build.log" || exit 1
}

# sanitize_run TOOL LIMIT CASES...: compute-sanitizer --tool TOOL on `scripts/sanitize_cases.py cuda CASES...` within
# LIMIT seconds into $OUT/TOOL-CASES.log (CASES' first word), then its exit status and the log's last SAN_TAIL (default 3)
# lines (sessions 44-45 repeated this in every sanitizer run).
sanitize_run() {
  local tool=$1 limit=$2 log="$OUT/$1-$3.log"; shift 2
  timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda "$@" > "$log" 2>&1
  echo "$tool $1 rc=$?"; tail -"${SAN_TAIL:-3}" "$log" | cut -c1-300
}

# tune_sweep DIR NAME LIMIT ARGS...: benchmarks.tune_dispatch ARGS into DIR/NAME (its log DIR/NAME.log) within LIMIT
# seconds; prints its exit status and the time (sessions 43-44 repeated this in every sweep script).
tune_sweep() {
  local dir=$1 name=$2 limit=$3; shift 3
  timeout "$limit" python3 -m benchmarks.tune_dispatch "$@" --out "$dir/$name" > "$dir/$name.log" 2>&1
  echo "$name rc=$? $(date +%T)"
}

# table_sweeps DIR MS: tune_sweep over the dispatch table's nine shapes (DIR/table) and the three lm_head shapes
# (DIR/<shape>, rows of their own) at the M grid MS (sessions 68-69 repeated these lines in their run scripts).
table_sweeps() {
  local s
  tune_sweep "$1" table 200 --ms "$2"
  for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do tune_sweep "$1" $s 60 --shapes $s --ms "$2"; done
}

# gemm_records LABEL SHAPES MS: kbit.gemm against cuBLAS at k = 4 (benchmarks.ab_paths --ops gemm), fp16 and bf16
# activations, into $OUT/gemm-{float16,bfloat16} (+ .log) and their tables $OUT/gemm-*-table.md (column LABEL).
gemm_records() {
  local dt
  for dt in float16 bfloat16; do
    timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes "$2" --ms "$3" --ks 4 --dtype $dt \
      --out "$OUT/gemm-$dt" > "$OUT/gemm-$dt.log" 2>&1; echo "gemm $dt rc=$?"
    python3 scripts/ab_table.py "$1=$OUT/gemm-$dt" --path gemm > "$OUT/gemm-$dt-table.md"
  done
}

# other_test_files: every tests/test_*.py but test_cuda_gemm.py (a run of its own), the slowest first (a timeout
# then loses the quick ones' results, not theirs).
other_test_files() {
  local first="tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py tests/test_quality.py
    tests/test_reference.py tests/test_large_tensors.py tests/test_integration_transformers.py
    tests/test_dependent_launch.py tests/test_cuda_format.py"
  echo $first $(ls tests/test_*.py | grep -v "test_cuda_gemm\.py" | grep -vF "$(echo $first | tr ' ' '\n')")
}

# ab_alternate ROUNDS ARGS...: the two-build A/B on one warm machine (docs/build.md): ROUNDS rounds of
# `scripts/probe_wgmma_build_ab.py ARGS` under ab_base/ (carried) and ab_new/ (left by the previous call) alternating,
# each process checked to import its own directory's kbit (returns 1 otherwise). The per-process files stay in
# /tmp/ab_rounds (a run returns 8 files): every round's rows go to $OUT/ab-all.json, the logs to $OUT/ab-all.log, the
# table of medians to $OUT/ab.md (printed). (Sessions 46-47 wrote this loop into each A/B script.)
ab_alternate() {
  local rounds=$1 A=/tmp/ab_rounds r b; shift
  rm -rf $A; mkdir -p $A "$OUT"
  xz -d -k -f ab_base/kbit/_C.cpython-312-x86_64-linux-gnu.so.xz
  [ -f ab_new/kbit/__init__.py ] && [ -f ab_new/kbit/_C.cpython-312-x86_64-linux-gnu.so ] ||
    { echo "ab_new missing: the machine was not the previous call's warm one"; return 1; }
  for r in $(seq 1 "$rounds"); do
    for b in base new; do
      PYTHONPATH=$(pwd)/ab_$b:$(pwd) timeout 150 python3 scripts/probe_wgmma_build_ab.py "$@" --label $b$r \
        --out $A/ab-$b$r.json > $A/ab-$b$r.log 2>&1; echo "$b$r rc=$?"
      grep -q "kbit from $(pwd)/ab_$b/" $A/ab-$b$r.log || { echo "$b$r did not import ab_$b/'s kbit"; return 1; }
    done
  done
  cat $A/ab-*.log > "$OUT/ab-all.log"
  python3 scripts/ab_rounds_table.py $A/ab-*.json --json "$OUT/ab-all.json" --md "$OUT/ab.md"
}

# ncu_profile LABEL ARGS...: Nsight Compute on one call of `scripts/ncu_gemm.py ARGS` (the first scalar_gemv kernel
# after 3 launches, `--clock-control none`: speed of light, pipes, memory tables, scheduler and warp stalls, per-SASS
# samples) into $OUT/LABEL-details.txt and $OUT/LABEL-sass.csv.xz (for scripts/ncu_sass_summary.py), then the details'
# headline lines (session 47 run 8 and session 48 run 11 wrote this loop into their scripts).
ncu_profile() {
  local label=$1; shift
  timeout 120 ncu --clock-control none --kernel-name regex:scalar_gemv --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats \
    --section InstructionStats --section LaunchStats --section Occupancy --section SourceCounters \
    --import-source no -o /tmp/ncu-$label python3 scripts/ncu_gemm.py "$@" > /tmp/ncu-$label.log 2>&1
  echo "ncu $label rc=$?"
  ncu --import /tmp/ncu-$label.ncu-rep --page details > "$OUT/$label-details.txt" 2>&1
  ncu --import /tmp/ncu-$label.ncu-rep --page source --csv --print-source sass > /tmp/$label-sass.csv 2>/dev/null
  xz -T4 -c /tmp/$label-sass.csv > "$OUT/$label-sass.csv.xz"
  grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps" \
    "$OUT/$label-details.txt" | head -12
}

# pytest_step NAME LIMIT ARGS...: pytest -q ARGS within LIMIT seconds into $R/NAME.log (scripts/device_run.sh's
# records directory), then its exit status and the failures and summary lines (the session scripts repeated these).
pytest_step() {
  local name=$1 log="$R/$1.log" limit=$2 rc
  shift 2
  timeout "$limit" python3 -m pytest -q -rs -p no:cacheprovider "$@" > "$log" 2>&1
  rc=$?
  echo "pytest $name rc=$rc$([ $rc = 124 ] && echo ' (timed out)')"
  grep -E "^(FAILED|ERROR)|passed|failed" "$log" | tail -6 | cut -c1-300
}
