// The cuBLASLt backend's entry points in a build without the CUDA toolkit.
#include "gpu_worker/backend.h"

namespace wavecrest {

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeCublasLtBackend(int) {
  return absl::FailedPreconditionError(
      "--backend=cublaslt: this wavecrest-worker was built without the CUDA toolkit, so it cannot "
      "time on a GPU. Rebuild where /usr/local/cuda exists, or use --backend=analytic "
      "--emulate=GPU");
}

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why_none) {
  if (why_none) *why_none = "built without CUDA";
  return {};
}

}  // namespace wavecrest
