#pragma once
// KBIT_HD marks helpers shared by the C++ CPU ops and the CUDA kernels, so both
// compute the format with the very same arithmetic (bit-exact CPU == CUDA).
#if defined(__CUDACC__)
#define KBIT_HD __host__ __device__ __forceinline__
#define KBIT_UNROLL _Pragma("unroll")
#else
#define KBIT_HD inline
#define KBIT_UNROLL
#endif
