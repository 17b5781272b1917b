"""Does compute-sanitizer's initcheck see what cuBLAS writes? (docs/numerics.md section 6)

Runs, with no kbit code at all, the fp32-output cuBLAS product the grouped E > 1024 fallback
makes per expert ([m, 32] x [32, 16], m = 2) and reads the result back with a PyTorch
elementwise kernel, then the same for a larger product. Run under
    compute-sanitizer --tool initcheck python3 scripts/initcheck_cublas.py
If initcheck reports uninitialized reads in the elementwise kernel, it does not track the
writes of the cuBLAS kernel that PyTorch picked for that shape (the names are printed).
"""
import torch
from torch.profiler import ProfilerActivity, profile


def product_then_read(m, n, k):
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        acc = torch.mm(x, w.t(), out_dtype=torch.float32)
        torch.cuda.synchronize()
    doubled = acc * 2  # reads every element cuBLAS wrote
    ref = x.float() @ w.float().t()
    err = float((doubled / 2 - ref).abs().max())
    names = sorted({e.name for e in prof.events() if e.device_type.name == "CUDA"})
    print(f"[{m}, {k}] x [{k}, {n}] -> fp32: max |err| {err:.2e}; kernels: {names}", flush=True)


if __name__ == "__main__":
    product_then_read(2, 16, 32)
    product_then_read(64, 256, 512)
    torch.cuda.synchronize()
    print("initcheck_cublas: done")
