// What the CLI's commands share (client/cli_common.cc): --gemm and --mode parsing, failures as
// exit codes, the --server requirement, and the measurement files read and written.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/errors.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CliCommonTest, ParsesGemmsWithAndWithoutABatch) {
  absl::StatusOr<std::vector<v1::GemmShape>> g = cli::ParseGemms("8192x12288x4096, 2048x2048x128x64");
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].m(), 8192);
  EXPECT_EQ((*g)[0].n(), 12288);
  EXPECT_EQ((*g)[0].k(), 4096);
  EXPECT_EQ((*g)[0].batch(), 1);
  EXPECT_EQ((*g)[1].batch(), 64);
}

TEST(CliCommonTest, ABadGemmIsAViolationOfTheFlag) {
  for (const char* text : {"1x2", "1x2xk", "1x2x3x4x5", ""}) {
    absl::StatusOr<std::vector<v1::GemmShape>> g = cli::ParseGemms(text);
    ASSERT_FALSE(g.ok()) << text;
    const std::vector<FieldViolation> v = ViolationsOf(g.status());
    ASSERT_EQ(v.size(), 1u) << text;
    EXPECT_EQ(v[0].field, "--gemm");
  }
  EXPECT_THAT(ViolationsOf(cli::ParseGemms("1x2").status())[0].description,
              HasSubstr("\"1x2\": expected MxNxK or MxNxKxBATCH"));
}

TEST(CliCommonTest, ModeIsAutoUnlessNamed) {
  EXPECT_EQ(*cli::ParseMode(""), v1::MODE_AUTO);
  EXPECT_EQ(*cli::ParseMode("auto"), v1::MODE_AUTO);
  EXPECT_EQ(*cli::ParseMode("measured"), v1::MODE_MEASURED);
  EXPECT_EQ(*cli::ParseMode("predicted"), v1::MODE_PREDICTED);
  absl::StatusOr<v1::Mode> bad = cli::ParseMode("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ViolationsOf(bad.status())[0].field, "--mode");
}

// A violation naming a --flag is a usage error (2); anything else is 10 + the status code.
TEST(CliCommonTest, FailReturnsTheUsageOrTheStatusExitCode) {
  std::ostringstream err;
  EXPECT_EQ(cli::Fail(err, FieldError("--gemm", "bad")), 2);
  EXPECT_THAT(err.str(), StartsWith("wavecrest: INVALID_ARGUMENT: --gemm: bad"));
  EXPECT_EQ(cli::Fail(err, FieldError("model.hidden_size", "bad")),
            10 + static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(cli::Fail(err, absl::NotFoundError("x")),
            10 + static_cast<int>(absl::StatusCode::kNotFound));
}

TEST(CliCommonTest, NeedServerNamesTheCommand) {
  CliOptions o;
  o.command = "devices";
  absl::Status st = cli::NeedServer(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ViolationsOf(st)[0].field, "--server");
  EXPECT_THAT(ViolationsOf(st)[0].description, HasSubstr("required for 'devices'"));
  o.server = "127.0.0.1:50051";
  EXPECT_TRUE(cli::NeedServer(o).ok());
}

TEST(CliCommonTest, ReadsEveryFileOfAListAndLabelsEach) {
  const std::string file = testing::SourcePath("data/measurements/cookbook-a100.csv");
  EXPECT_EQ(cli::Files(" a.csv,,b.csv ").size(), 2u);
  std::vector<std::string> labels;
  absl::StatusOr<std::vector<Measurement>> one = cli::ReadAll(file, &labels);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_FALSE(one->empty());
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_EQ(labels[0], absl::StrCat(file, ": ", one->size(), " rows"));
  absl::StatusOr<std::vector<Measurement>> two = cli::ReadAll(file + "," + file, nullptr);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2 * one->size());
  EXPECT_FALSE(cli::ReadAll("/nonexistent/x.csv", nullptr).ok());
}

TEST(CliCommonTest, WriteFileSaysWhereItCannotWrite) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "wavecrest_cli_common_test.txt").string();
  ASSERT_TRUE(cli::WriteFile(path, "hello\n").ok());
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "hello");
  std::filesystem::remove(path);
  absl::Status st = cli::WriteFile("/nonexistent-dir/x.txt", "x");
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(st.message()), HasSubstr("/nonexistent-dir/x.txt: cannot write"));
}

}  // namespace
}  // namespace wavecrest
