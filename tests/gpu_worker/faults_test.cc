// Unit tests of the worker's injected faults (gpu_worker/faults.h): which plans parse, and a faulty
// backend that fails only where and when its plan says.
#include "gpu_worker/faults.h"

#include <memory>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gpu_worker/backend.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ParseFaultPlan, AcceptsTheKindsAndRejectsTheRest) {
  for (const char* k : {"crash", "hang", "sticky", "oom", "slow"}) {
    EXPECT_TRUE(ParseFaultPlan(k, "", 0, 10).ok()) << k;
  }
  absl::StatusOr<FaultPlan> p = ParseFaultPlan("crash", "1x2x3", 4, 10);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->shape->m, 1);
  EXPECT_EQ(p->shape->k, 3);
  EXPECT_EQ(p->after, 4);
  EXPECT_THAT(std::string(ParseFaultPlan("explode", "", 0, 1).status().message()),
              HasSubstr("--fault"));
  EXPECT_THAT(std::string(ParseFaultPlan("hang", "1x2", 0, 1).status().message()),
              HasSubstr("--fault_shape"));
  EXPECT_FALSE(ParseFaultPlan("slow", "", -1, 1).ok());
}

TEST(FaultyBackend, OomAndStickyOnlyOnTheChosenShapeAfterN) {
  auto inner = MakeAnalyticBackend("h100-sxm");
  ASSERT_TRUE(inner.ok());
  absl::StatusOr<FaultPlan> plan = ParseFaultPlan("sticky", "64x64x64", 1, 0);
  ASSERT_TRUE(plan.ok());
  std::unique_ptr<TimingBackend> b = WithFaults(std::move(*inner), *plan);
  const GemmKey hit{{64, 64, 64, 1}, Layout::kTN, DType::kBf16};
  const GemmKey other{{128, 64, 64, 1}, Layout::kTN, DType::kBf16};
  EXPECT_TRUE(b->Time(hit, {}).ok());  // the first GEMM is spared (after = 1)
  EXPECT_TRUE(b->Time(other, {}).ok());
  EXPECT_FALSE(b->Broken());
  absl::StatusOr<v1::GemmTiming> t = b->Time(hit, {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(b->Broken());
}

}  // namespace
}  // namespace wavecrest
