// The cuBLASLt backend's entry points (gpu_worker/cuda/cublaslt_backend.cc; in a build without the
// CUDA toolkit, gpu_worker/no_cuda.cc) on a machine without a GPU. On a GPU, tests/gpu runs them.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gpu_worker/backend.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(CublasLtBackend, WithoutAGpuFailsWithAClearMessage) {
  std::string why;
  if (!ListCudaDevices(&why).empty()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(why.empty());
  absl::StatusOr<std::unique_ptr<TimingBackend>> b = MakeCublasLtBackend(0);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("--backend=analytic"));
}

}  // namespace
}  // namespace wavecrest
