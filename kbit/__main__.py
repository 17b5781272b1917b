"""Command line: `python -m kbit demo [options]`, `python -m kbit info`."""
import sys


def main() -> None:
    cmd, rest = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "demo":
        from .demo import main as demo_main
        demo_main(rest)
    elif cmd == "info":
        import torch
        import kbit
        print(f"kbit {kbit.__version__}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
              f"CUDA kernels compiled: {kbit.cuda_kernels_compiled()}, "
              f"GPU: {torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}")
    else:
        print("usage: python -m kbit {demo,info} [options]   (python -m kbit demo --help)")
        sys.exit(0 if cmd in ("-h", "--help") else 2)


main()
