#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::cuda {
namespace {

__device__ __forceinline__ uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

__device__ __forceinline__ float Load(const void* p, int64_t i, Elem e) {
  switch (e) {
    case Elem::kBf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case Elem::kFp16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case Elem::kFp32:
      return static_cast<const float*>(p)[i];
    case Elem::kFp8E4M3:
      return static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]);
  }
  return 0.0f;
}

__device__ __forceinline__ void Store(void* p, int64_t i, Elem e, float v) {
  switch (e) {
    case Elem::kBf16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
      break;
    case Elem::kFp16:
      static_cast<__half*>(p)[i] = __float2half(v);
      break;
    case Elem::kFp32:
      static_cast<float*>(p)[i] = v;
      break;
    case Elem::kFp8E4M3:
      static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);
      break;
  }
}

__global__ void FillRandomKernel(void* data, int64_t count, Elem elem, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t h = Mix(seed ^ Mix(static_cast<uint64_t>(i)));
    // 24 random bits -> [-1, 1); values that would round to zero are nudged away from it.
    float v = static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
    if (fabsf(v) < 1.0f / 64) v = v < 0 ? -1.0f / 64 : 1.0f / 64;
    Store(data, i, elem, v * scale);
  }
}

__global__ void FillNaNKernel(void* data, int64_t count, Elem elem) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    Store(data, i, elem, __int_as_float(0x7fc00000));
  }
}

__global__ void CountNonFiniteKernel(const void* data, int64_t count, Elem elem,
                                     unsigned long long* out) {
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (!isfinite(Load(data, i, elem))) ++bad;
  }
  if (bad) atomicAdd(out, bad);
}

__global__ void ProbeClockKernel(unsigned long long* out, unsigned long long spin_ns) {
  unsigned long long t0, t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  } while (t1 - t0 < spin_ns);
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t1 - t0;
}

int Blocks(int64_t count) {
  const int64_t b = (count + 255) / 256;
  return static_cast<int>(b < 4096 ? (b < 1 ? 1 : b) : 4096);
}

}  // namespace

cudaError_t FillRandom(void* data, int64_t count, Elem elem, uint64_t seed, cudaStream_t stream,
                       float scale) {
  FillRandomKernel<<<Blocks(count), 256, 0, stream>>>(data, count, elem, seed, scale);
  return cudaGetLastError();
}

cudaError_t FillNaN(void* data, int64_t count, Elem elem, cudaStream_t stream) {
  FillNaNKernel<<<Blocks(count), 256, 0, stream>>>(data, count, elem);
  return cudaGetLastError();
}

cudaError_t CountNonFinite(const void* data, int64_t count, Elem elem, unsigned long long* out,
                           cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(out, 0, sizeof(*out), stream);
  if (e != cudaSuccess) return e;
  CountNonFiniteKernel<<<Blocks(count), 256, 0, stream>>>(data, count, elem, out);
  return cudaGetLastError();
}

cudaError_t ProbeClock(unsigned long long* out, unsigned long long spin_ns, cudaStream_t stream) {
  ProbeClockKernel<<<1, 1, 0, stream>>>(out, spin_ns);
  return cudaGetLastError();
}

}  // namespace wavecrest::cuda
