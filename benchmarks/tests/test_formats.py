"""Weight formats and byte counts the benchmark relies on."""
import pytest
import torch

import kbit
from benchmarks import shapes as S
from benchmarks.peer_formats import fp8_rowwise, int4_quantize
from benchmarks.weights import LayerWeights, cold_copies, kbit_nbytes, tree_clone, tree_nbytes


def test_int4_scales_and_zeros_follow_tinygemm():
    # The CPU variant of PyTorch's int4 GEMM reads the same scales_and_zeros layout as the CUDA
    # one; agreeing with it pins the (q - 8) * scale + zero convention our reference uses.
    w = torch.randn(128, 512) / 16
    q, sz, deq = int4_quantize(w)
    assert sz.shape == (512 // 128, 128, 2) and sz.dtype == torch.bfloat16
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 8)
    x = torch.randn(3, 512, dtype=torch.bfloat16)
    y = torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, 128, sz).float()
    ref = x.float() @ deq.t()
    assert ((y - ref).norm() / ref.norm()) < 1e-2


def test_fp8_rowwise_roundtrip():
    w = torch.randn(64, 256)
    w8, scale, value = fp8_rowwise(w)
    assert w8.dtype == torch.float8_e4m3fn and scale.shape == (64, 1)
    assert ((value - w).norm() / w.norm()) < 0.05


@pytest.mark.parametrize("experts", [0, 3])
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_kbit_nbytes_matches_quantized_tensors(k, experts):
    shape = S.Shape("t", "test", 288, 40, expert=bool(experts))
    lw = LayerWeights(shape, experts, torch.device("cpu"))
    assert kbit_nbytes(shape, experts, k) == lw.quantized(k).nbytes == tree_nbytes(lw.quantized(k))


def test_clone_is_new_memory_with_same_values():
    lw = LayerWeights(S.Shape("t", "test", 256, 32), 0, torch.device("cpu"))
    qw = lw.quantized(4)
    twin = tree_clone(qw)
    assert isinstance(twin, kbit.QuantizedWeight) and twin.packed.data_ptr() != qw.packed.data_ptr()
    assert torch.equal(kbit.dequantize(twin), kbit.dequantize(qw))


def test_cold_copies_cover_four_times_l2():
    l2 = 50 * 2**20
    assert cold_copies(10 * 2**20, l2) == 20
    assert cold_copies(500 * 2**20, l2) == 1
    assert cold_copies(1, l2) == 4 * l2


def test_cpu_fallback_expert_stack_repeats_distinct_experts(monkeypatch):
    shape = S.Shape("t", "test", 64, 32, expert=True)
    lw = LayerWeights(shape, 20, torch.device("cpu"))
    lw.quantize_on_device, lw.dequantize_on_device = False, False
    qw = lw.quantized(3)
    assert qw.shape == (20, 32, 64)
    deq = lw.dequantized(3)
    assert torch.equal(deq, kbit.dequantize(qw, torch.float32))
    assert torch.equal(deq[0], deq[8])
