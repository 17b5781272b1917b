#!/usr/bin/env bash
# Build kbit._C here (CPU machine) for the GPU machine's Python 3.12 + torch 2.11 (sm_90a) and copy
# it to kbit/_C.cpython-312-x86_64-linux-gnu.so (git-ignored), so that a device run can carry the
# built extension instead of building it there (~150 s of device time per run). Needs a Python 3.12
# environment with torch==2.11.0, pybind11, scikit-build-core, ninja, cmake: PY312 (default
# /opt/py312/bin/python). Incremental: build/cp312-cp312-linux_x86_64/.
# The build is stamped with its sources' hash (kbit/_C.stamp); on the device, scripts/gpu_build.sh's
# use_carried_build takes it where the stamp matches (carry kbit/_C.stamp and the .so.xz).
set -euo pipefail
cd "$(dirname "$0")/.."
PY312=${PY312:-/opt/py312/bin/python}
start=$(date +%s)
. scripts/gpu_build.sh 2>/dev/null || true  # for source_stamp (its GPU arch probe fails here, unused)
stamp=$(source_stamp)  # before the build: sources edited while it runs make the stamp stale, not wrong
CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++ PATH=$PATH:/usr/local/cuda/bin KBIT_CUDA_ARCHS=${KBIT_CUDA_ARCHS:-90a} \
  $PY312 -m pip install --no-build-isolation --no-deps -q -e . > /tmp/build_py312.log 2>&1 || { tail -40 /tmp/build_py312.log; exit 1; }
so=build/cp312-cp312-linux_x86_64/_C.cpython-312-x86_64-linux-gnu.so
cp "$so" kbit/
echo "$stamp" > kbit/_C.stamp
xz -T2 -6 -k -f kbit/_C.cpython-312-x86_64-linux-gnu.so  # what a run carries (64 MiB cap)
echo "built $so in $(( $(date +%s) - start )) s; copied to kbit/ ($(du -h kbit/_C.cpython-312-x86_64-linux-gnu.so | cut -f1))"
