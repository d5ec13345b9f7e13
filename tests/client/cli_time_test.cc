// `wavecrest time` (client/cli_time.cc): it needs --server, and its flags are checked before any
// call (the address below is never dialled).
#include <string>

#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/cli_run.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

CliOptions Time() {
  CliOptions o;
  o.command = "time";
  o.server = "127.0.0.1:1";
  o.gpu = "h100-sxm";
  return o;
}

TEST(CliTimeTest, NeedsAServer) {
  CliOptions o = Time();
  o.server = "";
  o.gemm = "1x2x3";
  const CommandRun r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--server: required for 'time'"));
}

TEST(CliTimeTest, LayerFlagsOnlyWithLayers) {
  CliOptions o = Time();
  o.gemm = "1x2x3";
  o.routing = "zipf:1.2";
  CommandRun r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--routing: only with --layers"));
  o.routing = "";
  o.layer_kinds = "fused_attention";
  r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--layer_kinds: only with --layers"));
}

TEST(CliTimeTest, LayersNeedAModelAndNoGemmsNorAutotune) {
  CliOptions o = Time();
  o.layers = true;
  CommandRun r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--model: --layers times a model's layers"));
  o.model = testing::SourcePath("examples/models/pythia-1b.json");
  o.gemm = "1x2x3";
  r = RunCommandForTest(cli::DoTime, o);
  EXPECT_THAT(r.err, HasSubstr("--gemm: not with --layers"));
  o.gemm = "";
  o.autotune = true;
  r = RunCommandForTest(cli::DoTime, o);
  EXPECT_THAT(r.err, HasSubstr("--autotune: not with --layers"));
  o.autotune = false;
  o.layer_kinds = "attention_please";
  r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--layer_kinds:"));
}

TEST(CliTimeTest, BadGemmsAndModesFailBeforeTheCall) {
  CliOptions o = Time();
  o.gemm = "1x2";
  CommandRun r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gemm: \"1x2\""));
  o.gemm = "1x2x3";
  o.mode = "soon";
  r = RunCommandForTest(cli::DoTime, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--mode: \"soon\""));
}

}  // namespace
}  // namespace wavecrest
