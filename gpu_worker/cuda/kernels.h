// Small device kernels the timing engine needs around cuBLASLt: random inputs, a poisoned output,
// a finiteness count, and an SM clock probe (the reference for sampled output elements is computed
// on the host, core/gemm_check.h).
#ifndef WAVECREST_GPU_WORKER_CUDA_KERNELS_H_
#define WAVECREST_GPU_WORKER_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace wavecrest::cuda {

// Element types the kernels handle.
enum class Elem : int { kBf16 = 0, kFp16 = 1, kFp32 = 2, kFp8E4M3 = 3 };

// Uniform values in [-1, 1) × scale from a hash of (seed, index): never zeros, reproducible.
cudaError_t FillRandom(void* data, int64_t count, Elem elem, uint64_t seed, cudaStream_t stream,
                       float scale = 1.0f);
// NaN in every element, so that an element the GEMM did not write is caught.
cudaError_t FillNaN(void* data, int64_t count, Elem elem, cudaStream_t stream);
// Elements that are NaN or infinite; `*out` is device memory.
cudaError_t CountNonFinite(const void* data, int64_t count, Elem elem, unsigned long long* out,
                           cudaStream_t stream);

// Runs one block that spins for about `spin_ns` and writes the SM cycles and nanoseconds it saw
// (device memory, two values): cycles / ns is the SM clock in GHz at that moment. It is also the
// engine's blocking kernel: queued before a window of samples, it keeps the stream busy while
// the host queues the window's events and graph launches, so no sample includes launch latency
// (what nvbench's blocking kernel does).
cudaError_t ProbeClock(unsigned long long* out, unsigned long long spin_ns, cudaStream_t stream);

}  // namespace wavecrest::cuda

#endif  // WAVECREST_GPU_WORKER_CUDA_KERNELS_H_
