// The worker's entry points into the cuBLASLt engine: make the backend, list the devices.
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
