"""Quick CUDA check of the format ops: bit-exact against the CPU ops, then timings.

Not the test suite (tests/) or the benchmark suite (benchmarks/): a fast first look
for a development run on the GPU machine.
"""
import sys
import time

import torch

import kbit

ops = torch.ops.kbit
dev = torch.device("cuda")
fails = 0


def check(name, a, b):
    global fails
    same = a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu())
    if not same:
        fails += 1
        diff = (a.cpu().to(torch.float64) - b.cpu().to(torch.float64)).abs()
        print(f"MISMATCH {name}: shapes {tuple(a.shape)} {tuple(b.shape)}, "
              f"{(diff != 0).sum().item()} elements differ, max {diff.max().item():.3g}")


g = torch.Generator().manual_seed(0)
for (E, N, K) in [(0, 1, 32), (0, 17, 96), (0, 100, 512), (3, 33, 320), (0, 300, 2048)]:
    for k in (2, 3, 4, 5):
        for dt in (torch.float16, torch.bfloat16, torch.float32):
            shape = (E, N, K) if E else (N, K)
            W = torch.randn(shape, generator=g) * torch.exp(torch.randn(shape[:-1] + (1,), generator=g) * 3)
            W[..., 0, :32] = 0  # an all-zero block
            W = W.to(dt)
            cb = kbit.codebook(k)
            p0, a0, r0 = ops.quantize(W, cb, k)
            p1, a1, r1 = ops.quantize(W.to(dev), cb.to(dev), k)
            tag = f"E={E} N={N} K={K} k={k} {dt}"
            check("quantize.packed " + tag, p1, p0)
            check("quantize.absmax " + tag, a1, a0)
            check("quantize.row_scale " + tag, r1, r0)
            for od in (torch.float16, torch.bfloat16, torch.float32):
                check(f"dequantize {od} " + tag, ops.dequantize(p1, a1, r1, cb.to(dev), k, od),
                      ops.dequantize(p0, a0, r0, cb, k, od))
            tp0, ta0 = ops.repack(p0, a0)
            tp1, ta1 = ops.repack(p1, a1)
            check("repack.packed " + tag, tp1, tp0)
            check("repack.absmax " + tag, ta1, ta0)
            up1, ua1 = ops.unrepack(tp1, ta1, N, K)
            check("unrepack.packed " + tag, up1, p0)
            check("unrepack.absmax " + tag, ua1, a0)
            for od in (torch.float16, torch.float32):
                check(f"dequantize_tiled {od} " + tag, ops.dequantize_tiled(tp1, ta1, r1, cb.to(dev), k, K, od),
                      ops.dequantize(p0, a0, r0, cb, k, od))
print("bit-exact checks:", "FAILED" if fails else "all passed", f"({fails} mismatches)")

# gemm through dequant + cuBLAS, against an fp64 reference
for k in (2, 4, 5):
    W = torch.randn(1000, 2048, generator=g).half().to(dev)
    qw = kbit.quantize(W, k=k)
    for M in (1, 7, 64):
        x = torch.randn(M, 2048, generator=g).half().to(dev)
        y = kbit.gemm(x, qw)
        ref = x.double() @ kbit.dequantize(qw, torch.float32).double().t()
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        print(f"gemm k={k} M={M}: rel err {rel:.2e}")
        fails += rel > 1e-3


def time_graph(fn, calls=10, reps=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); graph.replay(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    times.sort()
    return times[len(times) // 2] * 1e-3


# Copy bandwidth and the format ops on an 8192 x 28672 matrix (issue 3's numbers).
big = torch.empty(2**28, dtype=torch.float16, device=dev).normal_()
dst = torch.empty_like(big)
t = time_graph(lambda: dst.copy_(big), calls=5)
copy_bw = 2 * big.numel() * 2 / t
print(f"copy bandwidth: {copy_bw / 1e9:.0f} GB/s (read + write)")
del big, dst
N, K = 28672, 8192
W = torch.randn(N, K, device=dev, dtype=torch.float16)
for k in (2, 3, 4, 5):
    cb = kbit.codebook(k).to(dev)
    p, a, r = ops.quantize(W, cb, k)
    tp, ta = ops.repack(p, a)
    qbytes = p.numel() * 4 + a.numel() + r.numel() * 4
    rows = []
    t = time_graph(lambda: ops.quantize(W, cb, k), calls=3, reps=10)
    rows.append(("quantize fp16->flat", W.numel() * 2 + qbytes, t))
    t = time_graph(lambda: ops.repack(p, a), calls=3, reps=10)
    rows.append(("repack", 2 * qbytes, t))
    t = time_graph(lambda: ops.dequantize(p, a, r, cb, k, torch.float16), calls=3, reps=10)
    rows.append(("dequantize flat->fp16", qbytes + W.numel() * 2, t))
    t = time_graph(lambda: ops.dequantize_tiled(tp, ta, r, cb, k, K, torch.float16), calls=3, reps=10)
    rows.append(("dequantize tiled->fp16", qbytes + W.numel() * 2, t))
    for name, nbytes, t in rows:
        print(f"k={k} {name:24s} {t * 1e6:9.1f} us {nbytes / t / 1e9:7.0f} GB/s "
              f"{100 * nbytes / t / copy_bw:5.1f}% of copy")


def rotated(make, nbytes, min_total=4 * 50 * 2**20):
    """Enough copies of an object of nbytes that cycling through them misses L2."""
    copies = max(1, -(-min_total // nbytes))
    return [make() for _ in range(copies)]


if "--no-gemm-table" not in sys.argv:
    print("\ngemm (cold L2, CUDA-graph medians), k=4 unless noted; us")
    print(f"{'shape':>14} {'M':>3} {'fp16':>8} {'kbit':>8} {'x':>6} {'floor':>7}  rel.err")
    for (N, K) in [(5120, 2048), (2048, 5120), (512, 2048), (14336, 4096), (28672, 8192)]:
        Wf = torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02
        for k in ((2, 3, 4, 5) if N == 14336 else (4,)):
            qw = kbit.quantize(Wf, k=k)
            qcopies = rotated(lambda: kbit.QuantizedWeight(qw.packed.clone(), qw.absmax.clone(), qw.row_scale.clone(),
                                                           qw.codebook, qw.k, qw.shape, qw.dtype, qw.layout), qw.nbytes)
            fcopies = rotated(lambda: Wf.clone(), Wf.numel() * 2) if k == 4 else None
            for M in (1, 4, 8, 16, 32, 64):
                x = torch.randn(M, K, device=dev, dtype=torch.float16)
                y = kbit.gemm(x, qw)
                ref = x.double() @ kbit.dequantize(qw, torch.float32).double().t()
                rel = ((y.double() - ref).norm() / ref.norm()).item()
                fails += rel > 1e-3
                it = [0]

                def run_kbit():
                    kbit.gemm(x, qcopies[it[0] % len(qcopies)]); it[0] += 1
                t_k = time_graph(run_kbit, calls=len(qcopies) * max(1, 32 // len(qcopies)), reps=15)
                t_f = float("nan")
                if fcopies is not None:
                    it2 = [0]

                    def run_f():
                        x @ fcopies[it2[0] % len(fcopies)].t(); it2[0] += 1
                    t_f = time_graph(run_f, calls=len(fcopies) * max(1, 32 // len(fcopies)), reps=15)
                floor = qw.nbytes / 3.0e12
                print(f"{f'{K}x{N} k{k}':>14} {M:>3} {t_f * 1e6:>8.2f} {t_k * 1e6:>8.2f} {t_f / t_k:>6.2f} "
                      f"{floor * 1e6:>7.2f}  {rel:.1e}")
print("FAILED" if fails else "all checks passed")
sys.exit(1 if fails else 0)
