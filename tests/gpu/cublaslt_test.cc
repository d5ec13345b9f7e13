// The cuBLASLt timing engine on a real GPU (CTest label `gpu`). Every test skips cleanly where
// there is no GPU. These check behaviour (results measured, checked, labelled; errors right), never
// speed: speed belongs to bench/gpu.
#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "gmock/gmock.h"
#include "gpu_worker/backend.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

class CublasLtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (ListCudaDevices(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    auto b = MakeCublasLtBackend(0);
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = std::move(*b);
  }
  TimingParams Quick() const {
    TimingParams p;
    p.max_seconds = 0.2;
    return p;
  }
  std::unique_ptr<TimingBackend> backend_;
};

TEST_F(CublasLtTest, FingerprintNamesTheDeviceAndItsSoftware) {
  const v1::DeviceFingerprint fp = backend_->Fingerprint();
  EXPECT_EQ(fp.backend(), "cublaslt");
  EXPECT_FALSE(fp.name().empty());
  EXPECT_GE(fp.compute_capability(), 70);
  EXPECT_GT(fp.sm_count(), 0);
  EXPECT_GT(fp.l2_bytes(), 0);
  EXPECT_FALSE(fp.driver_version().empty());
  EXPECT_FALSE(fp.cuda_runtime_version().empty());
  EXPECT_FALSE(fp.cublaslt_version().empty());
  EXPECT_GT(backend_->FreeMemoryBytes(), 0);
}

TEST_F(CublasLtTest, EveryLayoutAndDtypeIsMeasuredAndChecked) {
  const int cc = backend_->Fingerprint().compute_capability();
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32}) {
    if (cc < 80 && (d == DType::kBf16 || d == DType::kTf32)) continue;
    for (Layout l : {Layout::kTN, Layout::kNN, Layout::kNT}) {
      for (GemmShape s : {GemmShape{1024, 1536, 768, 1}, GemmShape{1000, 1537, 771, 1},
                          GemmShape{256, 256, 64, 48}}) {
        const GemmKey key{s, l, d};
        absl::StatusOr<v1::GemmTiming> t = backend_->Time(key, Quick());
        ASSERT_TRUE(t.ok()) << GemmKeyString(key) << ": " << t.status();
        EXPECT_EQ(t->provenance().source(), v1::SOURCE_MEASURED);
        EXPECT_EQ(t->provenance().method(), TimingMethod("cublaslt", false, false));
        EXPECT_GE(t->stats().samples(), 3);
        EXPECT_GT(t->time_s(), 0);
        EXPECT_LE(t->stats().p10_s(), t->stats().median_s());
        EXPECT_LE(t->stats().median_s(), t->stats().p90_s());
        EXPECT_GT(t->stats().launches_per_sample(), 0);
        EXPECT_GT(t->stats().sm_clock_mhz(), 0);
        EXPECT_EQ(t->shape().batch(), s.batch);
      }
    }
  }
}

TEST_F(CublasLtTest, Fp8RunsTnWhereSupportedAndRefusesOtherLayouts) {
  const GemmKey tn{{2048, 2048, 2048, 1}, Layout::kTN, DType::kFp8E4M3};
  absl::StatusOr<v1::GemmTiming> t = backend_->Time(tn, Quick());
  if (backend_->Fingerprint().compute_capability() < 89) {
    EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
    return;
  }
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(backend_->Time({{2048, 2048, 2048, 1}, Layout::kNN, DType::kFp8E4M3}, Quick())
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CublasLtTest, AutotuneReportsTheHeuristicsTimeBesideTheBest) {
  TimingParams p = Quick();
  p.autotune = true;
  p.top_k = 4;
  absl::StatusOr<v1::GemmTiming> t =
      backend_->Time({{4096, 4096, 4096, 1}, Layout::kTN, DType::kBf16}, p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->stats().heuristic_median_s(), 0);
  EXPECT_LE(t->time_s(), t->stats().heuristic_median_s());
  EXPECT_EQ(t->provenance().method(), TimingMethod("cublaslt", true, false));
}

TEST_F(CublasLtTest, ColdL2RotatesAndWarmL2DoesNot) {
  TimingParams warm = Quick();
  warm.warm_l2 = true;
  const GemmKey small{{1024, 1024, 1024, 1}, Layout::kTN, DType::kBf16};
  absl::StatusOr<v1::GemmTiming> c = backend_->Time(small, Quick());
  absl::StatusOr<v1::GemmTiming> w = backend_->Time(small, warm);
  ASSERT_TRUE(c.ok() && w.ok());
  EXPECT_TRUE(c->stats().cold_l2());
  EXPECT_FALSE(w->stats().cold_l2());
}

TEST_F(CublasLtTest, TooLargeForMemoryIsResourceExhaustedAndTheBackendStaysUsable) {
  const int64_t big = int64_t{1} << 19;  // 3 × 2^38 FP32 elements: terabytes
  absl::StatusOr<v1::GemmTiming> t =
      backend_->Time({{big, big, big, 1}, Layout::kTN, DType::kFp32}, Quick());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("MiB"));
  EXPECT_FALSE(backend_->Broken());
  EXPECT_TRUE(backend_->Time({{512, 512, 512, 1}, Layout::kTN, DType::kFp16}, Quick()).ok());
}

}  // namespace
}  // namespace wavecrest
