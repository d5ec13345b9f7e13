// Unit tests of bench mode's inputs and records (gpu_worker/bench.h): the GEMMs of a CSV file, and
// the samples log that replays the stopping rule on any host.
#include "gpu_worker/bench.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ParseGemmCsv, ReadsShapesWithDefaultsAndSkipsHeaderAndComments) {
  absl::StatusOr<std::vector<BenchGemm>> g = ParseGemmCsv(
      "m,n,k,batch,layout\n# comment\n\n8192, 8192, 8192\n4096,1537,4096,1,nn\n"
      "2048,2048,128,64,NT\n",
      DType::kFp16);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->size(), 3u);
  EXPECT_EQ((*g)[0].key.shape, (GemmShape{8192, 8192, 8192, 1}));
  EXPECT_EQ((*g)[0].key.layout, Layout::kTN);
  EXPECT_EQ((*g)[0].key.dtype, DType::kFp16);
  EXPECT_EQ((*g)[1].key.layout, Layout::kNN);
  EXPECT_EQ((*g)[2].key.shape.batch, 64);
  EXPECT_EQ((*g)[2].key.layout, Layout::kNT);
}

TEST(ParseGemmCsv, ErrorsNameTheLine) {
  for (const char* bad :
       {"1,2\n", "1,2,3,4,5,6\n", "1,0,3\n", "1,x,3\n", "1,2,3,1,TT\n", "1,2,3000000000\n"}) {
    absl::StatusOr<std::vector<BenchGemm>> g =
        ParseGemmCsv(absl::StrCat("m,n,k\n", bad), DType::kBf16);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("line 2")) << bad;
  }
  EXPECT_FALSE(ParseGemmCsv("# nothing\n", DType::kBf16).ok());
}

// bench --samples_log records each stream; replay runs the stopping rule over it on any host.
TEST(SamplesLog, RecordedStreamsReplayUnderTheStoppingRule) {
  // A quiet stream that the spread rule stops at 10 samples, and one with a 15% slow sample in
  // three that only the median criterion stops.
  std::vector<double> quiet(60, 1e-3), lumpy;
  for (int i = 0; i < 400; ++i) lumpy.push_back(i % 3 ? 1e-3 * (1 + 1e-4 * (i % 7)) : 1.15e-3);
  StoppingRule four_launches;
  four_launches.sample_scale = 4;
  const std::string log = SamplesLogLine("bf16 TN 4096x4096x4096 b1", quiet, four_launches, 0.06,
                                         "spread at most 1.00% ...") +
                          SamplesLogLine("bf16 TN 4096x50257x4096 b1", lumpy, StoppingRule(), 0.4,
                                         "sample cap (400) reached");
  TimingParams params;
  absl::StatusOr<std::string> table = ReplaySamplesLog(log, params);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, ::testing::ContainsRegex("4096x4096x4096 b1 +60 spread +10 spread"));
  EXPECT_THAT(*table, ::testing::ContainsRegex("4096x50257x4096 b1 +400 sample +[0-9]+ median"));
  // The recorded rule is the one replayed: a long launch's minimum of sampled time (the engine's
  // cold 300 ms before issue 35) keeps the quiet stream going past 10 samples (60 x 1 ms x 4
  // launches = 240 ms).
  StoppingRule long_launch = four_launches;
  long_launch.min_sampled_s = 0.3;
  table = ReplaySamplesLog(
      SamplesLogLine("bf16 TN 8192x8192x8192 b1", quiet, long_launch, 0.06, "budget"), params);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, ::testing::ContainsRegex("8192x8192x8192 b1 +60 budget +60 -"));
  // Lines that are not records are refused, naming the line.
  absl::StatusOr<std::string> bad = ReplaySamplesLog(log + "{\"key\": 1}\n", params);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("line 3"));
}

}  // namespace
}  // namespace wavecrest
