"""One shape's fp16 x @ W^T through cuBLAS (F.linear), a few calls, for Nsight Compute to profile next to a kbit
kernel of the same shape (scripts/session49_run5.sh).

    ncu --kernel-name regex:'gemm|sm90|xmma|cutlass' --launch-skip 2 --launch-count 1 python3 scripts/ncu_cublas.py --M 1024 --N 4096 --K 2048
"""
import argparse

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--M", type=int, default=1024)
    ap.add_argument("--N", type=int, default=4096)
    ap.add_argument("--K", type=int, default=2048)
    ap.add_argument("--calls", type=int, default=5)
    a = ap.parse_args()
    x = torch.randn(a.M, a.K, device="cuda", dtype=torch.float16)
    W = torch.randn(a.N, a.K, device="cuda", dtype=torch.float16) * a.K ** -0.5
    torch.cuda.synchronize()
    for _ in range(a.calls):
        F.linear(x, W)
    torch.cuda.synchronize()
    print(f"cuBLAS F.linear M={a.M} N={a.N} K={a.K}: {a.calls} calls")


if __name__ == "__main__":
    main()
