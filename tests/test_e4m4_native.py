"""The bit-level E4M4 floor (csrc/common/e4m4.h) equals its search definition on every float in
[0, 256]: builds and runs tests/native/check_e4m4_floor.cpp (about 30 s; skipped without a C++
compiler)."""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.mark.slow
def test_e4m4_floor_code_exhaustive(tmp_path):
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cxx:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "check_e4m4_floor"
    build = subprocess.run([cxx, "-O2", "-std=c++17", "-I", os.path.join(ROOT, "csrc", "common"),
                            os.path.join(HERE, "native", "check_e4m4_floor.cpp"), "-o", str(exe)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1132462086 floats, 0 mismatches" in out.stdout, out.stdout
