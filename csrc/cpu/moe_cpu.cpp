// The MoE glue ops on the CPU: their ATen forms (csrc/common/moe_aten.cpp), and grouped_gemm_slots composed of kbit
// ops (csrc/common/moe_slots.cpp).
#include <torch/library.h>

#include "../common/moe_aten.h"
#include "../common/moe_slots.h"

namespace kbit {

TORCH_LIBRARY_IMPL(kbit, CPU, m) {
  m.impl("moe_route", &moe_route_aten);
  m.impl("moe_gather", &moe_gather_aten);
  m.impl("moe_route_gather", &moe_route_gather_aten);
  m.impl("silu_and_mul", &silu_and_mul_aten);
  m.impl("moe_combine", &moe_combine_aten);
  m.impl("router_topk", &router_topk_aten);
  m.impl("grouped_gemm_slots", &grouped_gemm_slots_composite);
}

}  // namespace kbit
