"""Where a GEMM op's output goes wrong: for small shapes, the relative error of
torch.ops.kbit.<op> against the float64 reference, and the worst rows (mod 16 / 64) and tokens
(mod 8) -- a fragment- or layout-mapping bug shows as a pattern there.

    python scripts/kernel_error_map.py --op wgmma_gemm
"""
import argparse

import torch

import kbit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", default="wgmma_gemm")
    args = ap.parse_args()
    op = getattr(torch.ops.kbit, args.op)
    torch.manual_seed(0)
    for (M, N, K) in [(16, 256, 256), (64, 256, 256), (16, 256, 32), (64, 300, 2080), (128, 4096, 4096)]:
        W = torch.randn(N, K)
        qw = kbit.quantize(W, k=4).to("cuda")
        W_hat = kbit.dequantize(qw, dtype=torch.float32).double()
        x = torch.randn(M, K).half().cuda()
        ref = x.double() @ W_hat.T
        y = op(x, qw.packed, qw.absmax, qw.row_scale, qw.codebook, 4).double()
        err = (y - ref).abs() / ref.abs().mean()
        rel = float((y - ref).norm() / ref.norm())
        print(f"M={M} N={N} K={K}: relative error {rel:.3e}, nan {int(torch.isnan(y).sum())}")
        if rel > 1e-3:
            bad = err > 1e-2
            print("  bad fraction", float(bad.double().mean()))
            print("  bad by row % 16:", [int(bad[:, r::16].sum()) for r in range(16)])
            print("  bad by row // 16 (first 16 tiles):", [int(bad[:, 16 * i:16 * i + 16].sum()) for i in range(min(16, N // 16))])
            print("  bad by token % 8:", [int(bad[t::8].sum()) for t in range(8)])
            print("  bad by token // 8:", [int(bad[8 * i:8 * i + 8].sum()) for i in range(M // 8)])
            print("  y[0, :8]  ", [round(v, 3) for v in y[0, :8].tolist()])
            print("  ref[0, :8]", [round(v, 3) for v in ref[0, :8].tolist()])


if __name__ == "__main__":
    main()
