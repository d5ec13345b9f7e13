// Recommend's answer (service/recommend_answer.cc): the rows shown (the top N and the baseline,
// once), the verdict with its reason, and what a row says when it does not fit.
#include <string>

#include "core/gpu_catalog.h"
#include "core/memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/recommend_logic.h"
#include "service/recommend_ranking.h"
#include "service/spec_io.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(RecommendAnswerTest, MemoryReasonOnlyForWhatDoesNotFit) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  MemoryEstimate m;
  m.fits = true;
  EXPECT_EQ(recommend_internal::MemoryReason(m, gpu), "");
  m.fits = false;
  m.total_bytes = 100.0 * (1 << 30);
  m.capacity_bytes = 80.0 * (1 << 30);
  m.fits_with_recompute = true;
  const std::string why = recommend_internal::MemoryReason(m, gpu);
  EXPECT_THAT(why, StartsWith("does not fit: needs 100.0 GiB per GPU"));
  EXPECT_THAT(why, HasSubstr("h100-sxm's 80 GiB"));
  EXPECT_THAT(why, HasSubstr("; fits with full activation recomputation"));
}

TEST(RecommendAnswerTest, TheTopRowsTheBaselineOnceAndAVerdict) {
  v1::RecommendRequest request;
  absl::StatusOr<v1::ModelSpec> model =
      LoadModelFile(testing::SourcePath("examples/models/hf/gpt2.json"));
  ASSERT_TRUE(model.ok()) << model.status();
  *request.mutable_model() = *model;
  request.set_gpu("h100-sxm");
  request.set_mode(v1::MODE_PREDICTED);
  request.set_top(3);
  absl::StatusOr<v1::RecommendResponse> r = RunRecommend(request, CallContext());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->done());
  ASSERT_GE(r->candidates_size(), 2);
  EXPECT_LE(r->candidates_size(), 4);  // the top 3, and the baseline after them
  int baselines = 0;
  for (int i = 0; i < r->candidates_size(); ++i) {
    baselines += r->candidates(i).baseline();
    if (i > 0) {
      EXPECT_GT(r->candidates(i).rank(), r->candidates(i - 1).rank());
    }
  }
  EXPECT_EQ(baselines, 1);
  EXPECT_EQ(r->verdict(), v1::VERDICT_CHANGE);
  EXPECT_THAT(r->verdict_reason(), StartsWith("change the shape: #1 runs"));
  EXPECT_TRUE(r->candidates(0).beats_baseline());
}

}  // namespace
}  // namespace wavecrest
