"""One kbit.gemm / grouped_gemm shape, called a few times: a target for Nsight Compute.

    ncu --kernel-name regex:tc_gemm --launch-skip 3 --launch-count 1 --section WarpStateStats \
        python3 scripts/ncu_gemm.py --k 4 --M 1 --N 28672 --K 8192

Weights are random (quantized on the GPU); ncu flushes caches between its replays (cold L2).
"""
import argparse

import torch

import kbit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--M", type=int, default=1, help="tokens (per expert when --experts > 0)")
    ap.add_argument("--N", type=int, default=28672)
    ap.add_argument("--K", type=int, default=8192)
    ap.add_argument("--experts", type=int, default=0, help="> 0: grouped_gemm over this many experts")
    ap.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--op", default="gemm", choices=("gemm", "gemv_gemm", "mma_gemm", "tile_gemm", "wgmma_gemm"),
                    help="dense: kbit.gemm (dispatch) or one kernel's op")
    ap.add_argument("--split", type=int, default=-1,
                    help="the dense GEMV's cluster split (kbit._C._set_gemv_split_cluster): -1 the rule, 0 never, 2/4/8")
    ap.add_argument("--layout", type=int, default=-1,
                    help="the dense x-staged GEMV's CTA layout (kbit._C._set_gemv_staged_layout): -1 the rule, 0 one unit "
                    "per CTA, 1 unit slots, 2 unit slots with the wide pair table")
    ap.add_argument("--stages", type=int, default=0, help="the unit slots' ring stages (kbit._C._set_gemv_staged_stages)")
    ap.add_argument("--aid", action="append", default=[], metavar="NAME=VALUE",
                    help="any other tuning aid, kbit._C._set_NAME(VALUE) (e.g. gemv_resident_stages=3); repeatable")
    a = ap.parse_args()
    kbit._C._set_gemv_split_cluster(a.split)
    kbit._C._set_gemv_staged_layout(a.layout)
    kbit._C._set_gemv_staged_stages(a.stages)
    for aid in a.aid:  # (after the options above: an --aid of the same setter wins)
        name, eq, value = aid.partition("=")
        setter = getattr(kbit._C, f"_set_{name}", None)
        if not eq or setter is None:
            ap.error(f"--aid {aid!r}: expected NAME=VALUE with kbit._C._set_NAME a tuning aid")
        setter(int(value))
    dtype = torch.float16 if a.dtype == "fp16" else torch.bfloat16
    shape = (a.experts, a.N, a.K) if a.experts else (a.N, a.K)
    qw = kbit.quantize(torch.randn(*shape, device="cuda", dtype=dtype), k=a.k)
    if a.experts:
        x = torch.randn(a.experts * a.M, a.K, device="cuda", dtype=dtype)
        off = torch.arange(0, a.experts + 1, device="cuda", dtype=torch.int32) * a.M
        for _ in range(a.calls):
            kbit.grouped_gemm(x, qw, off)
    else:
        x = torch.randn(a.M, a.K, device="cuda", dtype=dtype)
        for _ in range(a.calls):
            if a.op == "gemm":
                kbit.gemm(x, qw)
            else:
                getattr(torch.ops.kbit, a.op)(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, a.k)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
