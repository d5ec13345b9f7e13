// Small device kernels the timing engine needs around cuBLASLt: random inputs, a poisoned output,
// a reference for sampled output elements, a finiteness count, and an SM clock probe.
#ifndef WAVECREST_GPU_WORKER_CUDA_KERNELS_H_
#define WAVECREST_GPU_WORKER_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace wavecrest::cuda {

// Element types the kernels handle.
enum class Elem : int { kBf16 = 0, kFp16 = 1, kFp32 = 2, kFp8E4M3 = 3 };

// Uniform values in [-1, 1) from a hash of (seed, index): never zeros, reproducible.
cudaError_t FillRandom(void* data, int64_t count, Elem elem, uint64_t seed, cudaStream_t stream);
// NaN in every element, so that an element the GEMM did not write is caught.
cudaError_t FillNaN(void* data, int64_t count, Elem elem, cudaStream_t stream);
// Elements that are NaN or infinite; `*out` is device memory.
cudaError_t CountNonFinite(const void* data, int64_t count, Elem elem, unsigned long long* out,
                           cudaStream_t stream);

// The reference for `samples` elements of D = op(A)·op(B) in cuBLAS (column-major) terms. For
// sample s, element (rows[s], cols[s]) of batch batches[s]; writes ref (fp32 accumulate of the
// operands as stored), the sum of |a·b| (for the tolerance) and D's value as float. All pointers to
// per-sample arrays are device memory.
struct ReferenceArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* d = nullptr;
  Elem ab_elem = Elem::kBf16;
  Elem d_elem = Elem::kBf16;
  bool trans_a = false;
  bool trans_b = false;
  int64_t k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  int samples = 0;
  const int64_t* rows = nullptr;
  const int64_t* cols = nullptr;
  const int64_t* batches = nullptr;
  float* ref = nullptr;
  float* abs_sum = nullptr;
  float* got = nullptr;
};
cudaError_t ReferenceSamples(const ReferenceArgs& args, cudaStream_t stream);

// Runs one block that spins for about `spin_ns` and writes the SM cycles and nanoseconds it saw
// (device memory, two values): cycles / ns is the SM clock in GHz at that moment.
cudaError_t ProbeClock(unsigned long long* out, unsigned long long spin_ns, cudaStream_t stream);

}  // namespace wavecrest::cuda

#endif  // WAVECREST_GPU_WORKER_CUDA_KERNELS_H_
