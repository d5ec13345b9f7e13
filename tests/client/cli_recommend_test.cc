// `wavecrest recommend` (client/cli_recommend.cc): the constraint flags read into the request,
// offline answers, and --export picking one candidate.
#include <string>

#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/client/cli_run.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

CliOptions Gpt2() {
  CliOptions o;
  o.command = "recommend";
  o.model = testing::SourcePath("examples/models/hf/gpt2.json");
  o.gpu = "h100-sxm";
  return o;
}

TEST(CliRecommendTest, OfflineItAnswersWithTheVerdictFirst) {
  const CommandRun r = RunCommandForTest(cli::DoRecommend, Gpt2());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("CHANGE"));
}

TEST(CliRecommendTest, ExportBestWritesTheFirstWinnersConfigOverTheHfFile) {
  CliOptions o = Gpt2();
  o.export_pick = "best";
  const CommandRun r = RunCommandForTest(cli::DoRecommend, o);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json config = nlohmann::json::parse(r.out);
  EXPECT_EQ(config["vocab_size"].get<int64_t>() % 64, 0);
  EXPECT_EQ(config["n_head"], 12);
  EXPECT_THAT(r.err, HasSubstr("exported #"));
  EXPECT_THAT(r.err, HasSubstr("changed vocab_size"));
}

TEST(CliRecommendTest, ExportOfARankNotShownOrNotARankIsAUsageError) {
  CliOptions o = Gpt2();
  o.export_pick = "99";
  CommandRun r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--export: no candidate ranked 99 among the"));
  o.export_pick = "first";
  r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("\"first\": a rank of the table or best"));
  o.export_pick = "1";
  o.export_format = "yaml";
  r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--export-format: unknown \"yaml\""));
}

TEST(CliRecommendTest, ListFlagsNameTheEntryThatIsNotANumber) {
  CliOptions o = Gpt2();
  o.allowed_head_dims = "64,x";
  CommandRun r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--allowed-head-dims: not a number: x"));
  o = Gpt2();
  o.tp_options = "2,four";
  r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tp-options: not a number: four"));
}

TEST(CliRecommendTest, MeasuredNeedsAServer) {
  CliOptions o = Gpt2();
  o.mode = "measured";
  const CommandRun r = RunCommandForTest(cli::DoRecommend, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mode: measured needs --server"));
}

}  // namespace
}  // namespace wavecrest
