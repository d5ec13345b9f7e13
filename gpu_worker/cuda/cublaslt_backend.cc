// The cuBLASLt timing engine: how wavecrest measures a GEMM (method cublaslt-timing-v2).
//
// Every decision that needs no GPU is made by core/gemm_plan.h and tested on any machine; this
// file carries it out. Per GEMM:
//  1. Plan (before any allocation): overflow-checked sizes, the worker's caps, FP8 rules (TN on
//     transposed copies on Ada/Hopper, 16-byte leading dimensions, Transformer Engine's
//     accumulation modes), free memory, the framework's workspace (32 MiB on Hopper and later,
//     4 MiB before), the input sets for a cold L2, and the watchdog (a launch the catalog predicts
//     longer than half of it is refused before it runs).
//  2. Inputs: each operand's sets in one allocation, random values (never zeros).
//  3. Per algorithm (the heuristic's first; its top k when autotuning): one launch into a
//     NaN-poisoned output, timed, then checked: every element finite, and 16 elements against a
//     host reference that reads the operands as the row-major product of core/gemm.h (not as the
//     cuBLAS call does), within per-dtype tolerances (core/gemm_check.h). That launch's time sizes
//     the sample (launches per replay a multiple of the sets, so each replay goes round all of
//     them) and is checked against the watchdog.
//  4. L launches captured in a CUDA graph; warm-up (about 200 ms for launches of 100 µs or more,
//     50 ms below); then samples: a blocking kernel, the start event, one graph replay, the stop
//     event, a clock probe. Sampling stops on the spread target after a minimum of sampled time
//     (300 ms for long launches), or at the budget.
//  5. Autotuning: the fastest and the heuristic's first choice are re-timed alternately, and those
//     samples are reported (the ones that chose the winner would be biased low).
//  6. The SM clock: NVML's, sampled during the reported samples; else the median of the probes
//     queued right after each sample.
// Heartbeats go to the server through every phase. A sticky CUDA error marks the backend broken:
// the worker reports it and exits.
#include "gpu_worker/cuda/cublaslt_engine.h"

namespace wavecrest {

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeCublasLtBackend(int device) {
  return engine::CublasLtBackend::Create(device);
}

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why_none) {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why_none) *why_none = absl::StrCat(cudaGetErrorName(e), ": ", cudaGetErrorString(e));
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back({i, prop.name,
                   CatalogNameForDevice(prop.name, prop.multiProcessorCount,
                                        static_cast<int64_t>(prop.totalGlobalMem))});
  }
  if (out.empty() && why_none) *why_none = "no CUDA devices";
  return out;
}

}  // namespace wavecrest
