// `wavecrest calibrate` (client/cli_calibrate.cc): the folds checked, the attention report alone,
// and --evaluate's table and JSON.
#include <string>

#include "client/cli_commands.h"
#include "core/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/client/cli_run.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(CliCalibrateTest, FoldsMustBeBetweenTwoAndFifty) {
  CliOptions o;
  o.command = "calibrate";
  o.folds = 1;
  const CommandRun r = RunCommandForTest(cli::DoCalibrate, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--folds: must be in [2, 50]; got 1"));
}

TEST(CliCalibrateTest, WithoutFitOrAttentionDataThereIsNothingToCalibrate) {
  CliOptions o;
  o.command = "calibrate";
  o.fit = "";
  o.attention_data = "";
  o.attention_check = "";
  const CommandRun r = RunCommandForTest(cli::DoCalibrate, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--fit: nothing to calibrate"));
}

TEST(CliCalibrateTest, EvaluateScoresTheCurrentCalibrationByGroup) {
  CliOptions o;
  o.command = "calibrate";
  o.evaluate = testing::SourcePath("data/measurements/cookbook-a100.csv");
  const CommandRun table = RunCommandForTest(cli::DoCalibrate, o);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("measurements (error = measured/predicted - 1)"));
  EXPECT_THAT(table.out, HasSubstr("a100"));
  o.format = "json";
  const CommandRun json = RunCommandForTest(cli::DoCalibrate, o);
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["model"], std::string(kCostModelName));
  ASSERT_FALSE(j["rows"].empty());
  const nlohmann::json& row = j["rows"][0];
  EXPECT_DOUBLE_EQ(row["error"].get<double>(),
                   row["measured_s"].get<double>() / row["predicted_s"].get<double>() - 1);
  EXPECT_FALSE(j["groups"].empty());
}

TEST(CliCalibrateTest, AnUnreadableAttentionFileNamesItsFlag) {
  CliOptions o;
  o.command = "calibrate";
  o.attention_data = "/nonexistent/attention.csv";
  const CommandRun r = RunCommandForTest(cli::DoCalibrate, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--attention_data:"));
}

}  // namespace
}  // namespace wavecrest
