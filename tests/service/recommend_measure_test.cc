// Recommend's measuring stage (service/recommend_measure.cc), through a fake measurer: the best K
// and the baseline measured and ranked first, the rest predicted after them, and a measuring
// failure in MODE_AUTO a note rather than an error.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"
#include "tests/fakes/fake_measurer.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

v1::RecommendRequest Gpt2(v1::Mode mode) {
  v1::RecommendRequest request;
  absl::StatusOr<v1::ModelSpec> model =
      LoadModelFile(testing::SourcePath("examples/models/hf/gpt2.json"));
  EXPECT_TRUE(model.ok()) << model.status();
  if (model.ok()) *request.mutable_model() = *model;
  request.set_gpu("h100-sxm");
  request.set_mode(mode);
  request.set_measure_top_k(2);
  request.set_top(6);
  return request;
}

TEST(RecommendMeasureTest, TheBestKAndTheBaselineAreMeasuredAndRankedFirst) {
  FakeMeasurer fake;
  CallContext ctx;
  ctx.measurer = &fake;
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(Gpt2(v1::MODE_MEASURED), ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->gemms_measured(), 0);
  EXPECT_FALSE(fake.gemms_asked().empty());
  // At most K + 1 rows (the baseline among them) are measured, and they come first.
  int measured = 0;
  bool predicted_seen = false;
  for (const v1::Candidate& c : r->candidates()) {
    if (c.source() == v1::SOURCE_MEASURED) {
      EXPECT_FALSE(predicted_seen) << "a measured row after a predicted one";
      ++measured;
    } else {
      predicted_seen = true;
    }
  }
  EXPECT_GE(measured, 1);
  EXPECT_LE(measured, 3);
  bool rescored_note = false;
  for (const std::string& n : r->notes()) {
    rescored_note |= n.find("re-scored with measured GEMM times") != std::string::npos;
  }
  EXPECT_TRUE(rescored_note);
}

TEST(RecommendMeasureTest, WithoutAWorkerAutoIsPredictedWithANote) {
  FakeMeasurer fake;
  fake.up = false;
  CallContext ctx;
  ctx.measurer = &fake;
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(Gpt2(v1::MODE_AUTO), ctx);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gemms_measured(), 0);
  for (const v1::Candidate& c : r->candidates()) EXPECT_EQ(c.source(), v1::SOURCE_PREDICTED);
  EXPECT_TRUE(fake.gemms_asked().empty());
}

}  // namespace
}  // namespace wavecrest
