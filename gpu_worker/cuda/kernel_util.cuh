// Helpers the CUDA kernels of the layer engine share (layer_kernels.cu, moe_kernels.cu): element
// conversions in FP32, block reductions, grid sizes and the dispatch on the element type.
#ifndef WAVECREST_GPU_WORKER_CUDA_KERNEL_UTIL_CUH_
#define WAVECREST_GPU_WORKER_CUDA_KERNEL_UTIL_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::cuda::kernel_util {

constexpr int kThreads = 256;

__device__ __forceinline__ float ToF(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ToF(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToF(float v) { return v; }
template <typename T>
__device__ __forceinline__ T FromF(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __forceinline__ __half FromF<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __forceinline__ float FromF<float>(float v) {
  return v;
}

// Sum over the block (kThreads threads); every thread gets the result.
__device__ inline float BlockSum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float t = lane < kThreads / 32 ? shared[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return t;
}

__device__ inline float BlockMax(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float t = lane < kThreads / 32 ? shared[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
  return t;
}

inline int Blocks(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65536 ? (b < 1 ? 1 : b) : 65536);
}

// Runs `launch` with the element type of `elem` (FP8 is not a layer storage type).
template <typename F>
cudaError_t Dispatch(Elem elem, const F& launch) {
  switch (elem) {
    case Elem::kBf16:
      launch(__nv_bfloat16{});
      break;
    case Elem::kFp16:
      launch(__half{});
      break;
    case Elem::kFp32:
      launch(float{});
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace wavecrest::cuda::kernel_util

#endif  // WAVECREST_GPU_WORKER_CUDA_KERNEL_UTIL_CUH_
