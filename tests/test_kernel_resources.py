"""The built extension's kernels keep their registers and their asynchrony: no new stack (register spills) in the
dense decode GEMV, no serialized wgmmas in the wgmma GEMM.

Session 29 found the x-resident GEMV kernels of 8 and 16 token slots spilling under their 128-register cap since
session 27 (a change to the item loop added live 64-bit values), which cost up to 23% at M = 8-32 on the H200 and
went unnoticed for two sessions: no test looked at the compiled code. This reads the resources of the extension's
own sm_90a code (`cuobjdump -res-usage`, no GPU needed) and checks every dense mma-decode GEMV kernel
(scalar_gemv_kernel, not grouped, one unit per CTA layout, x staged or resident): its stack must be 0 bytes, or at
most the bytes listed in KNOWN_STACK (measured; lower is fine).

The wgmma GEMM keeps up to kWgInFlight (4) wgmmas in flight per warpgroup: each step waits until at most 3 are
pending (`WARPGROUP.DEPBAR.LE gsb0, 0x3` in the SASS); the post-scaled bf16 kernels (16 and 32 tokens) keep a block's
two in flight and wait for both at its end (session 72). Where ptxas cannot prove that safe it serializes them
(warning C7513, which a quiet build does not show) and every step waits for its own wgmma (`gsb0, 0x0`). Session
30 found that in half the kernels (a branch between the wgmmas; it cost no time there, but the next cause may).
test_wgmma_kernels_keep_wgmmas_in_flight reads each wgmma kernel's SASS (`cuobjdump -sass -fun`) and allows one full
wait: the drain after the main loop. It also finds no R2UR between the group loop's first and last wgmma: each
wgmma's descriptor is computed in uniform registers. Session 44's first loop over units (an exit inside it, 64-bit
divisions as subroutine calls) moved the descriptors to ordinary registers, two R2UR a wgmma (+21% instructions a
group, ~8% slower calls) and no test noticed.

cuobjdump comes with the CUDA toolkit, or from PyPI (`pip install nvidia-cuda-cuobjdump`, .ci/run installs it);
KBIT_CUOBJDUMP names one explicitly. `cuobjdump -sass` also needs nvdisasm (the toolkit's, or `pip install
nvidia-cuda-nvdisasm`; KBIT_NVDISASM). Skips where a tool is not found or the CUDA kernels were not compiled.

    python tests/test_kernel_resources.py    # the table of every scalar_gemv kernel with a stack
"""
import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess

import pytest

import kbit

# (k, token slots, x resident) -> the most stack bytes allowed (fp16 and bf16 alike). Session 29's build had x resident
# at 16 slots (k = 2, 3, 5) and at 3 slots (k = 4) 8 bytes each; session 36 (layout version 4, x loaded a block ahead
# at 8+ slots) k = 5 x resident at 16 slots 24 bytes, its cost not measured. Session 47's build (main before session
# 48) had k = 2, 3 at 16 slots 8 bytes and k = 4 at 3 slots none; since session 48's x-image changes only that k = 5
# kernel has any, so the other allowances are gone. (k = 2 staged at 16 slots spilled 16 bytes too and ran 6-10%
# slower; since session 37 that kernel loads x in the block it decodes: no stack.) Since session 68's split pair table
# at k = 5 (pair_table.cuh: the split table has no 10-bit index to build) that kernel has none either.
KNOWN_STACK = {}
# The dense gated kernels (kDenseGated, session 65: gemm_silu_and_mul's GEMV, one token slot, x staged or resident):
# none (a 2-slot x-resident form spilled 16 bytes at k = 4; the 2-slot forms are not built).
KNOWN_STACK_GATED = {}

# (the kernel's template arguments after the layout, kSharedX since session 38, kBySlot since session 60 and
# kDenseGated since session 65: their defaulted false is in the name too, `Lb0E`; the names before them had none. A
# by-slot kernel is a grouped one: in neither map below)
_GEMV = re.compile(r"scalar_gemv_kernelIN3c10(?:4Half|8BFloat16)ELi(\d)ELi(\d+)ELb([01])ELNS0_10GemvDecodeE(\d)"
                   r"ELb([01])ELb([01])ELNS0_16GemvStagedLayoutE(\d)E(?:Lb([01])E)?(?:Lb([01])E)?(?:Lb([01])E)?E")
_MMA = 2  # GemvDecode::kMma


def find_cuda_tool(name, variable, near=None):
    """The CUDA binary tool `name` to use (the path in $variable, next to `near`, on PATH, in the toolkit, from its PyPI
    wheel), or None."""
    candidates = [os.environ.get(variable), os.path.join(os.path.dirname(near), name) if near else None,
                  shutil.which(name)]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(os.path.join(home, "bin", name))
    spec = importlib.util.find_spec("nvidia")  # the PyPI wheels: site-packages/nvidia/cu*/bin/<name>
    for root in (spec.submodule_search_locations if spec else None) or []:
        candidates += sorted(glob.glob(os.path.join(root, "cu*", "bin", name)))
    return next((c for c in candidates if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)


def find_cuobjdump():
    """The cuobjdump to use, or None."""
    return find_cuda_tool("cuobjdump", "KBIT_CUOBJDUMP")


@functools.lru_cache(maxsize=None)  # (both tests read the same listing)
def kernel_resources(tool, library, arch=None):
    """((mangled name, registers, stack bytes), ...) of every kernel in library's device code (of `arch`'s cubin only,
    e.g. "sm_90a"; else of every cubin: a multi-arch build lists a kernel once per target)."""
    command = [tool] + (["-arch", arch] if arch else []) + ["-res-usage", library]
    return tuple(parse_resources(subprocess.run(command, capture_output=True, text=True, check=True).stdout))


def parse_resources(text):
    """cuobjdump -res-usage's output -> [(mangled name, registers, stack bytes)]."""
    rows, name = [], None
    for line in text.splitlines():
        m = re.search(r"Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+)", line)
        if m and name:
            rows.append((name, int(m.group(1)), int(m.group(2))))
            name = None
    return rows


def gemv_kernels(rows):
    """[(k, token slots, grouped, decode, x resident, row schedule, layout, x shared, fp16?, registers, stack)] of
    every scalar_gemv kernel in rows; raises if a scalar_gemv kernel's name does not parse (a template change the
    pattern missed would otherwise leave the checks below with nothing to check)."""
    found = []
    for name, regs, stack in rows:
        if "scalar_gemv_kernel" not in name:
            continue
        m = _GEMV.search(name)
        assert m, f"a scalar_gemv kernel name the pattern does not read (update _GEMV): {name}"
        k, slots, grouped, decode, resident, row_schedule, layout = map(int, m.groups()[:7])
        shared, gated = int(m.group(8) or 0), int(m.group(10) or 0)
        found.append((k, slots, grouped, decode, resident, row_schedule, layout, shared, "Half" in name, regs, stack,
                      gated))
    return found


def dense_gemv_stacks(rows, gated=False):
    """{(k, token slots, x resident, fp16?): stack} of the dense mma-decode GEMV kernels, one unit per CTA (gated:
    the gated ones, kDenseGated)."""
    found = {}
    for k, slots, grouped, decode, resident, row_schedule, layout, shared, fp16, _, stack, g in gemv_kernels(rows):
        if grouped or decode != _MMA or row_schedule or layout != 0 or bool(g) != gated:
            continue
        found[(k, slots, bool(resident), fp16)] = stack
    return found


def shared_x_gemv_resources(rows):
    """{(k, token slots, fp16?): (registers, stack)} of the grouped x-shared GEMV kernels (kSharedX)."""
    return {(k, slots, fp16): (regs, stack)
            for k, slots, grouped, _, _, _, _, shared, fp16, regs, stack, _ in gemv_kernels(rows) if shared}


def _inputs():
    if not kbit.cuda_kernels_compiled():
        pytest.skip("the CUDA kernels were not compiled")
    tool = find_cuobjdump()
    if tool is None:
        pytest.skip("no cuobjdump (CUDA toolkit, or pip install nvidia-cuda-cuobjdump)")
    return tool, kbit._C.__file__


def test_dense_gemv_kernels_do_not_spill():
    tool, library = _inputs()
    # the sm_90a cubin's (the allowances were measured there; a multi-arch build lists each kernel once per target)
    stacks = dense_gemv_stacks(kernel_resources(tool, library, "sm_90a"))
    if not stacks:
        pytest.skip("no sm_90a code in this build")
    # every k, both dtypes; x staged at 1-4, 8, 16 slots and x resident at 2-4, 8, 16 (the parse found them all)
    for k in (2, 3, 4, 5):
        for fp16 in (True, False):
            for slots in (1, 2, 3, 4, 8, 16):
                assert (k, slots, False, fp16) in stacks, (k, slots, fp16, sorted(stacks))
            for slots in (2, 3, 4, 8, 16):
                assert (k, slots, True, fp16) in stacks, (k, slots, fp16, sorted(stacks))
    over = {key: stack for key, stack in stacks.items() if stack > KNOWN_STACK.get(key[:3], 0)}
    assert not over, ("dense GEMV kernels with more stack (spills) than allowed, (k, slots, x resident, fp16): "
                      f"bytes: {over}; allowed {KNOWN_STACK}. Check ptxas (-Xptxas -v) and time the kernel before "
                      "raising an allowance.")
    gated = dense_gemv_stacks(kernel_resources(tool, library, "sm_90a"), gated=True)
    assert sorted(gated) == sorted((k, 1, r, fp16) for k in (2, 3, 4, 5) for r in (False, True)
                                   for fp16 in (True, False)), sorted(gated)
    over = {key: stack for key, stack in gated.items() if stack > KNOWN_STACK_GATED.get(key[:3], 0)}
    assert not over, f"dense gated GEMV kernels with more stack than allowed: {over}; allowed {KNOWN_STACK_GATED}"


def test_grouped_shared_x_gemv_kernels_do_not_spill():
    # the grouped x-shared kernels (session 38: 4 and 8 token slots, every k, both dtypes; CTAs of up to 16 warps at
    # 128 registers a thread): no stack (the session's build had none; a runtime-flag form had spilled 8 bytes)
    tool, library = _inputs()
    found = shared_x_gemv_resources(kernel_resources(tool, library, "sm_90a"))
    if not found:
        pytest.skip("no sm_90a code in this build")
    assert sorted(found) == sorted((k, s, fp16) for k in (2, 3, 4, 5) for s in (4, 8) for fp16 in (True, False)), found
    bad = {key: v for key, v in found.items() if v[0] > 128 or v[1] > 0}
    assert not bad, f"grouped x-shared GEMV kernels over 128 registers or with stack, (k, slots, fp16): (regs, stack): {bad}"


# the kernel of work clusters and (wgmma_stream_gemm_kernel) of stream-K pieces: k, tokens, row tiles
_WGMMA = re.compile(r"wgmma_(?:stream_)?gemm_kernelIN3c10(?:4Half|8BFloat16)ELi(\d)ELi(\d+)ELi(\d+)EE")
# Stack bytes k = 5's 64 x 16 wgmma kernels may keep (test_wgmma_kernels_keep_wgmmas_in_flight).
WGMMA_KNOWN_STACK = 8


def wgmma_loop_r2ur(sass):
    """R2UR instructions (a value moved from an ordinary register to a uniform one) from the first wgmma of a kernel's
    SASS to its last: the group loop's wgmmas, unrolled."""
    lines = sass.split("\n")
    at = [i for i, line in enumerate(lines) if re.search(r"\bHGMMA\.", line)]
    return sum(1 for line in lines[at[0]:at[-1] + 1] if re.search(r"\bR2UR\b", line)) if at else 0


def wgmma_waits(sass):
    """One kernel's SASS -> (wgmma instructions, waits for all of them to complete, waits leaving some pending)."""
    mmas = len(re.findall(r"\bHGMMA\.", sass))
    full = len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0\b", sass))
    partial = len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x[1-9]\b", sass))
    return mmas, full, partial


def test_wgmma_kernels_keep_wgmmas_in_flight():
    tool, library = _inputs()
    # cuobjdump -sass runs nvdisasm (the toolkit's, or `pip install nvidia-cuda-nvdisasm`), found on PATH
    disassembler = find_cuda_tool("nvdisasm", "KBIT_NVDISASM", near=tool)
    if disassembler is None:
        pytest.skip("no nvdisasm for cuobjdump -sass (CUDA toolkit, or pip install nvidia-cuda-nvdisasm)")
    env = dict(os.environ, PATH=os.path.dirname(disassembler) + os.pathsep + os.environ.get("PATH", ""))
    # the sm_90a cubin's kernels only: other targets compile the kernel to a trap (wgmma needs sm_90a)
    names = [name for name, _, _ in kernel_resources(tool, library, "sm_90a") if _WGMMA.search(name)]
    if not names:
        pytest.skip("no wgmma kernels in this build (no sm_90a target)")
    # every k, both dtypes, the ten CTA shapes; and stream-K in the six persistent ones (80-160 tokens)
    shapes = {tuple(map(int, _WGMMA.search(n).groups())) + ("Half" in n, "stream" in n) for n in names}
    assert len(shapes) == len(names) == 4 * 10 * 2 + 4 * 6 * 2, sorted(shapes)
    assert {s[1] for s in shapes if s[4]} == {80, 96, 112, 128, 144, 160}, sorted(shapes)
    # no stack (spills) in any of them: at 144 and 160 tokens the consumers' 72 and 80 accumulators live on the
    # registers the producer warpgroup gives back (setmaxnreg). Known: k = 5's 64 x 16 shape (the split pair table's
    # lookups, session 69) keeps one or two words there, none of them loaded or stored between its first and last
    # wgmma (the group's unrolled steps; checked below).
    resources = {name: (regs, stack) for name, regs, stack in kernel_resources(tool, library, "sm_90a")
                 if _WGMMA.search(name)}
    spilled = {name: r for name, r in resources.items() if r[1]}
    known = {name for name in spilled if _WGMMA.search(name).groups()[:3] == ("5", "64", "16") and "stream" not in name
             and spilled[name][1] <= WGMMA_KNOWN_STACK}
    assert set(spilled) == known, {n: r for n, r in spilled.items() if n not in known}
    # ... which works only if the kernel launches at the 168 registers the CTA's pool is sized from (kWgLaunchRegisters:
    # the consumers' setmaxnreg.inc waits for what the producers' dec gives back) and ptxas kept both moves (it drops
    # setmaxnreg with a warning a quiet build does not show); no other shape moves registers
    wide = {name for name in resources if _WGMMA.search(name).group(2) in ("144", "160")}
    assert len(wide) == 4 * 2 * 2 * 2, sorted(wide)  # (k, dtype, 144 / 160, stream-K or not)
    assert all(resources[name][0] == 168 for name in wide), {n: resources[n] for n in wide}
    listing = subprocess.run([tool, "-arch", "sm_90a", "-sass", "-fun", ",".join(names), library], capture_output=True,
                             text=True, check=True, env=env).stdout
    sass_of = {part.split("\n", 1)[0].strip(): part for part in re.split(r"\n\s*Function : ", listing)[1:]}
    assert sorted(sass_of) == sorted(names), "cuobjdump -sass listed other functions than those asked for"
    for name in known:
        lines = sass_of[name].split("\n")
        at = [i for i, line in enumerate(lines) if re.search(r"\bHGMMA\.", line)]
        local = [line.strip() for line in lines[at[0]:at[-1] + 1] if re.search(r"\b(?:LDL|STL)\b", line)]
        assert not local, (name, local)
    serialized, moved = {}, {}
    for name, sass in sass_of.items():
        moves = (len(re.findall(r"USETMAXREG\.TRY_ALLOC", sass)), len(re.findall(r"USETMAXREG\.DEALLOC", sass)))
        assert moves == ((1, 1) if name in wide else (0, 0)), (name, moves)
        mmas, full, partial = wgmma_waits(sass)
        assert mmas >= 16, (name, mmas)  # a group's 16 steps, unrolled
        if "BFloat16" in name and _WGMMA.search(name).group(2) in ("16", "32"):
            # post-scaled bf16 (wgmma_post_scale): a block's two wgmmas in flight, then a wait for both before its
            # partial sums are folded: 8 full waits a group and the drain, one partial wait a block but the last
            if (mmas, full, partial) != (16, 9, 7):
                serialized[name] = (mmas, full, partial)
        elif full > 1 or partial == 0:
            serialized[name] = (mmas, full, partial)
        if r2ur := wgmma_loop_r2ur(sass):
            moved[name] = r2ur
    assert not serialized, ("wgmma kernels whose wgmmas ptxas serialized (every step waits for its own: C7513; "
                            f"build with -Xptxas -v to see why), name: (wgmmas, full waits, partial waits): {serialized}")
    assert not moved, ("wgmma kernels whose group loop moves values into uniform registers (the wgmma descriptors out "
                       f"of uniform registers: a call or an exit inside a loop around it?), name: R2UR count: {moved}")


def test_wgmma_wait_parser():
    pipelined = ("HGMMA.64x16x16.F32 R24, R32, gdesc[UR8], R24, gsb0 ;\nWARPGROUP.DEPBAR.LE gsb0, 0x3 ;\n" * 16
                 + "WARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n")
    assert wgmma_waits(pipelined) == (16, 1, 16)
    serialized = "HGMMA.64x16x16.F32 R24, R32, gdesc[UR8], R24, gsb0 ;\nWARPGROUP.DEPBAR.LE gsb0, 0x0 ;\n" * 16
    assert wgmma_waits(serialized) == (16, 16, 0)
    name = "_ZN4kbit4cuda17wgmma_gemm_kernelIN3c104HalfELi4ELi16ELi16EEEvNS0_10TcGemmArgsE14CUtensorMap_st"
    assert _WGMMA.search(name).groups() == ("4", "16", "16")
    stream = "_ZN4kbit4cuda24wgmma_stream_gemm_kernelIN3c108BFloat16ELi5ELi144ELi8EEEvNS0_10TcGemmArgsE14CUtensorMap_st"
    assert _WGMMA.search(stream).groups() == ("5", "144", "8")
    # R2UR between the first and the last wgmma only (session 44's regression: two a wgmma)
    step = "IMAD.MOV.U32 R41, RZ, RZ, 0x40000040 ;\nR2UR UR19, R41 ;\nHGMMA.64x16x16.F32 R24, R40, gdesc[UR16], R24, gsb0 ;\n"
    assert wgmma_loop_r2ur("R2UR UR4, R2 ;\n" + pipelined) == 0
    assert wgmma_loop_r2ur("HGMMA.64x16x16.F32 R24, R32, gdesc[UR8], R24, gsb0 ;\n" + step * 15) == 15
    assert wgmma_loop_r2ur("no wgmma") == 0


def test_parser_reads_resource_lines():
    # the parser against cuobjdump's format (a fixed sample: no tool needed)
    sample = ("Resource usage:\n Common:\n  GLOBAL:0\n Function "
              "_ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi4ELi8ELb0ELNS0_10GemvDecodeE2ELb1ELb0ELNS0_16GemvStaged"
              "LayoutE0EEEvNS0_10TcGemmArgsE:\n  REG:128 STACK:24 SHARED:1024 LOCAL:0 CONSTANT[0]:704 TEXTURE:0\n"
              " Function _ZN4kbit4cuda18scalar_gemv_kernelIN3c108BFloat16ELi2ELi1ELb1ELNS0_10GemvDecodeE2ELb0ELb0ELNS0_"
              "16GemvStagedLayoutE0EEEvNS0_10TcGemmArgsE:\n  REG:128 STACK:0 SHARED:1024 LOCAL:0\n")
    rows = parse_resources(sample)
    assert [(r[1], r[2]) for r in rows] == [(128, 24), (128, 0)]
    assert dense_gemv_stacks(rows) == {(4, 8, True, True): 24}  # (the grouped kernel is not a dense one)
    # since session 38 the names end in kSharedX (`Lb0E` / `Lb1E`)
    sample = ("Function _ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi3ELi16ELb0ELNS0_10GemvDecodeE2ELb1ELb0ELNS0_16"
              "GemvStagedLayoutE0ELb0EEEvNS0_10TcGemmArgsE:\n  REG:128 STACK:8 SHARED:1024\n"
              "Function _ZN4kbit4cuda18scalar_gemv_kernelIN3c108BFloat16ELi4ELi8ELb1ELNS0_10GemvDecodeE2ELb0ELb0ELNS0_16"
              "GemvStagedLayoutE0ELb1EEEvNS0_10TcGemmArgsE:\n  REG:128 STACK:0 SHARED:1024\n")
    rows = parse_resources(sample)
    assert dense_gemv_stacks(rows) == {(3, 16, True, True): 8}
    assert shared_x_gemv_resources(rows) == {(4, 8, False): (128, 0)}
    with pytest.raises(AssertionError, match="does not read"):  # a name the pattern misses fails, not skips
        gemv_kernels([("_ZN4kbit4cuda18scalar_gemv_kernelIN3c104HalfELi4ELi8ELb0ELNS0_10GemvDecodeE2EXX", 64, 0)])


if __name__ == "__main__":
    tool = find_cuobjdump()
    if tool is None:
        raise SystemExit("no cuobjdump found")
    for (k, slots, resident, fp16), stack in sorted(dense_gemv_stacks(kernel_resources(tool, kbit._C.__file__,
                                                                                       "sm_90a")).items()):
        if stack:
            print(f"k={k} slots={slots:2d} {'x resident' if resident else 'x staged  '} "
                  f"{'fp16' if fp16 else 'bf16'}: {stack} bytes of stack")
