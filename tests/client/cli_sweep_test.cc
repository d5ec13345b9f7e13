// `wavecrest sweep` (client/cli_sweep.cc): a model's dimension or one GEMM's, the mode predicted
// unless asked, and the plot written with --svg.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/cli_run.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

CliOptions GemmSweep() {
  CliOptions o;
  o.command = "sweep";
  o.gpu = "h100-sxm";
  o.vary = "m";
  o.gemm = "4096x4096x4096";
  o.from = 4000;
  o.to = 4096;
  o.step = 32;
  return o;
}

TEST(CliSweepTest, SweepsOneGemmsDimensionPredicted) {
  CliOptions o = GemmSweep();
  o.layout = "NN";
  const CommandRun r = RunCommandForTest(cli::DoSweep, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sweep of m on h100-sxm: 4 points"));
  EXPECT_THAT(r.out, HasSubstr("PREDICTED"));
}

TEST(CliSweepTest, AGemmSweepNeedsExactlyOneGemm) {
  CliOptions o = GemmSweep();
  o.gemm = "";
  CommandRun r = RunCommandForTest(cli::DoSweep, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gemm: required to sweep m, n or k"));
  o.gemm = "1x1x1,2x2x2";
  r = RunCommandForTest(cli::DoSweep, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gemm: give one GEMM to sweep"));
  o = GemmSweep();
  o.mode = "auto";
  r = RunCommandForTest(cli::DoSweep, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mode: auto and measured need --server"));
}

TEST(CliSweepTest, WritesTheModelsPlotTitledByItsName) {
  CliOptions o;
  o.command = "sweep";
  o.model = testing::SourcePath("examples/models/pythia-1b.json");
  o.gpu = "h100-sxm";
  o.vary = "hidden";
  o.from = 2048;
  o.to = 2112;
  o.step = 64;
  o.svg = (std::filesystem::temp_directory_path() / "wavecrest_cli_sweep_test.svg").string();
  const CommandRun r = RunCommandForTest(cli::DoSweep, o);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(o.svg);
  std::stringstream svg;
  svg << f.rdbuf();
  EXPECT_THAT(svg.str(), HasSubstr("<svg"));
  EXPECT_THAT(svg.str(), HasSubstr(", varying hidden"));
  std::filesystem::remove(o.svg);
  o.svg = "/nonexistent-dir/plot.svg";
  const CommandRun bad = RunCommandForTest(cli::DoSweep, o);
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--svg: cannot write /nonexistent-dir/plot.svg"));
}

}  // namespace
}  // namespace wavecrest
