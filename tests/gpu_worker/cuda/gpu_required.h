// The GPU tests' rule: skip cleanly where the machine has no GPU, FAIL where it has one that CUDA
// cannot start (an old driver, a broken install), so that a GPU run never looks green for tests
// that did not run.
#ifndef WAVECREST_TESTS_GPU_WORKER_CUDA_GPU_REQUIRED_H_
#define WAVECREST_TESTS_GPU_WORKER_CUDA_GPU_REQUIRED_H_

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gpu_worker/backend.h"

namespace wavecrest {

enum class GpuState { kUsable, kAbsent, kBroken };

// Whether CUDA can run here; `why` says what is missing or broken otherwise.
inline GpuState CheckGpu(std::string* why) {
  if (!ListCudaDevices(why).empty()) return GpuState::kUsable;
  std::error_code ec;
  const std::filesystem::path gpus("/proc/driver/nvidia/gpus");
  const bool present =
      std::filesystem::exists("/dev/nvidia0", ec) ||
      (std::filesystem::is_directory(gpus, ec) &&
       std::filesystem::directory_iterator(gpus, ec) != std::filesystem::directory_iterator());
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool hidden = visible && (std::string(visible).empty() || std::string(visible) == "-1");
  if (present && !hidden) {
    *why =
        "this machine has an NVIDIA GPU (/proc/driver/nvidia/gpus or /dev/nvidia0) but CUDA "
        "cannot start: " +
        *why;
    return GpuState::kBroken;
  }
  *why = "no GPU: " + *why;
  return GpuState::kAbsent;
}

}  // namespace wavecrest

// In a fixture's SetUp: FAIL on a broken GPU, skip without one.
#define WAVECREST_REQUIRE_GPU()                \
  do {                                         \
    std::string gpu_why;                       \
    switch (::wavecrest::CheckGpu(&gpu_why)) { \
      case ::wavecrest::GpuState::kBroken:     \
        FAIL() << gpu_why;                     \
      case ::wavecrest::GpuState::kAbsent:     \
        GTEST_SKIP() << gpu_why;               \
      case ::wavecrest::GpuState::kUsable:     \
        break;                                 \
    }                                          \
  } while (0)

#endif  // WAVECREST_TESTS_GPU_WORKER_CUDA_GPU_REQUIRED_H_
