#pragma once
// Dispatch over the three float types kbit reads and writes (float16, bfloat16,
// float32); ATen's FLOATING_TYPES would also instantiate double, which kbit never takes.
#include <ATen/Dispatch.h>

#define KBIT_DISPATCH_FLOAT_TYPES(TYPE, NAME, ...)            \
  AT_DISPATCH_SWITCH(TYPE, NAME,                              \
                     AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__) \
                     AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__) \
                     AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__))
