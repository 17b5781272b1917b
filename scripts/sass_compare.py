"""Which tested build each function of a new build matches, by its SASS (CPU machine; cuobjdump from the toolkit or
its PyPI wheel, as tests/test_kernel_resources.py finds it). For a build whose source changed after the last GPU run:
every function whose SASS (instructions and function-relative addresses, encodings dropped) equals a tested build's
ran there.

    python3 scripts/sass_compare.py NEW.so TESTED_A.so [TESTED_B.so ...] [--filter scalar_gemv] [--rename PAT=REPL]

--rename: a regex substitution on the new build's names before matching (a template parameter added with a default
changes every instantiation's mangled name: session 60's kBySlot, 'ELb0EEEvNS0_10TcGemmArgsE$=EEvNS0_10TcGemmArgsE').
"""
import argparse
import collections
import hashlib
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_kernel_resources import find_cuda_tool  # noqa: E402


# An anonymous namespace's mangled name (<length>_GLOBAL__N__<hash>_<n>_<file>_cu_<hash>[_<n>], <length> its
# characters) carries a per-compilation id, which can differ between two builds of the same source: functions are
# matched with that identifier replaced by its file's name.
ANONYMOUS_NAMESPACE = re.compile(r"(\d+)(_GLOBAL__N__)")
ANONYMOUS_FILE = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_(\w+?)_cu_")


def match_name(name):
    """The function's mangled name with each anonymous namespace's identifier replaced by <anon FILE.cu>."""
    out, at = [], 0
    for m in ANONYMOUS_NAMESPACE.finditer(name):
        if m.start() < at:
            continue
        ident = name[m.start(2):m.start(2) + int(m.group(1))]
        f = ANONYMOUS_FILE.match(ident)
        out.append(name[at:m.start()] + (f"<anon {f.group(1)}.cu>" if f else m.group(1) + ident))
        at = m.start(2) + int(m.group(1))
    return "".join(out) + name[at:]


def sass_hashes(cuobjdump, so, name_filter):
    """{function (match_name): sha1 of its SASS lines without their encodings}."""
    out = subprocess.run([cuobjdump, "-sass", so], capture_output=True, text=True, check=True).stdout
    hashes, name, body = {}, None, []
    for line in out.splitlines() + ["Function : <end>"]:
        m = re.search(r"Function : (\S+)", line)
        if m:
            if name and name_filter in name:
                hashes[match_name(name)] = hashlib.sha1("\n".join(body).encode()).hexdigest()
            name, body = m.group(1), []
        elif name and re.match(r"\s+/\*[0-9a-f]{4,}\*/", line):
            body.append(re.sub(r"/\* 0x[0-9a-f]+ \*/", "", line).strip())
    return hashes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("new")
    p.add_argument("tested", nargs="+")
    p.add_argument("--filter", default="", help="only functions whose mangled name contains this")
    p.add_argument("--rename", action="append", default=[], help="PAT=REPL: re.sub on the new build's names")
    a = p.parse_args()
    cuobjdump = find_cuda_tool("cuobjdump", "KBIT_CUOBJDUMP")
    if cuobjdump is None:
        sys.exit("cuobjdump not found (the CUDA toolkit, or pip install nvidia-cuda-cuobjdump)")
    new = sass_hashes(cuobjdump, a.new, a.filter)
    for rule in a.rename:
        pat, repl = rule.split("=", 1)
        new = {re.sub(pat, repl, name): h for name, h in new.items()}
    tested = [(path, sass_hashes(cuobjdump, path, a.filter)) for path in a.tested]
    matched, unmatched = collections.Counter(), []
    for name, h in sorted(new.items()):
        first = next((path for path, hashes in tested if hashes.get(name) == h), None)
        if first is None:
            unmatched.append(name)
        else:
            matched[first] += 1
    print(f"{len(new)} functions; the first tested build with the same SASS: " +
          ", ".join(f"{path} {n}" for path, n in matched.items()) + f"; none: {len(unmatched)}")
    for name in unmatched:
        print("  no tested build:", name)
    sys.exit(1 if unmatched else 0)


if __name__ == "__main__":
    main()
