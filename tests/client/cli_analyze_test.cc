// `wavecrest analyze` (client/cli_analyze.cc): the run's flags make the answer a training step,
// and a bad --recompute or --flop-count is a usage error naming the flag.
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/cli_run.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CliOptions Llama70b() {
  CliOptions o;
  o.command = "analyze";
  o.model = testing::SourcePath("examples/models/llama-3-70b.json");
  o.gpu = "h100-sxm";
  return o;
}

TEST(CliAnalyzeTest, WithoutRunFlagsTheAnswerIsOneRanksKernels) {
  const CommandRun r = RunCommandForTest(cli::DoAnalyze, Llama70b());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("kernel MFU"));
  EXPECT_THAT(r.out, Not(HasSubstr("training step on")));
}

TEST(CliAnalyzeTest, AnyRunFlagMakesTheAnswerATrainingStep) {
  CliOptions o = Llama70b();
  o.tp = 8;
  o.pp = 4;
  o.gpus = 64;
  o.global_batch = 1024;
  o.recompute = "full";
  const CommandRun r = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("training step on 64 GPUs (8 nodes): t=8 p=4 d=2"));
  EXPECT_THAT(r.out, HasSubstr("full recomputation"));
  // JSON carries the run's step.
  o.format = "json";
  const CommandRun j = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_THAT(j.out, HasSubstr("\"recompute\": \"RECOMPUTE_FULL\""));
  // TorchTitan's op-level policy by its name, in the table's words and the JSON's enum.
  o.recompute = "op";
  o.format = "table";
  const CommandRun op = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(op.code, 0) << op.err;
  EXPECT_THAT(op.out, HasSubstr("op-level selective recomputation"));
  EXPECT_THAT(op.out, HasSubstr("TorchTitan's 'op' policy"));
  o.eager = true;
  EXPECT_THAT(RunCommandForTest(cli::DoAnalyze, o).out, HasSubstr("assumes: eager PyTorch (eager)"));
  o.eager = false;
  o.format = "json";
  EXPECT_THAT(RunCommandForTest(cli::DoAnalyze, o).out,
              HasSubstr("\"recompute\": \"RECOMPUTE_OP\""));
}

// --moe-unfused-ops alone makes the answer a step that prices Megatron-Core's unfused expert ops
// (GPT-OSS: biased experts, a clamped GLU) and says so; the JSON carries the flag back.
// At 128k tokens the two counts of attention's FLOPs part: the answer gives MFU in both, and the
// fused kernel's row counts the blocks it computes, so that its GFLOP over its time is its TFLOP/s.
TEST(CliAnalyzeTest, LongContextAnswerGivesMfuInBothCounts) {
  CliOptions o = Llama70b();
  o.model = testing::SourcePath("examples/models/llama-3-8b.json");
  o.tp = 8;
  o.cp = 8;
  o.seq = 131072;
  o.gpus = 64;
  o.global_batch = 64;
  o.recompute = "full";
  o.sequence_parallel = true;
  const CommandRun r = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(full attention FLOPs; MFU "));
  EXPECT_THAT(r.out, HasSubstr("counting its causal half: --flop-count causal)"));
  // Its gradients reduce over the context-parallel ranks too (d = 1 here), and the table says so.
  EXPECT_THAT(r.out, HasSubstr("DP+CP gradient sync"));
  o.flop_count = "causal";
  const CommandRun causal = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(causal.code, 0) << causal.err;
  EXPECT_THAT(causal.out, HasSubstr("counting its whole s × s product: --flop-count full)"));
  // The forward kernel's row: GFLOP, time and TFLOP/s agree (time in us or ms).
  const std::string row = r.out.substr(r.out.find("attn_fused     fwd"), 200);
  const std::vector<std::string> cells = absl::StrSplit(row, ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 21u);
  const double gflop = std::stod(cells[9]);
  const double time = std::stod(cells[18]) * (cells[19] == "ms" ? 1e-3 : 1e-6);
  EXPECT_NEAR(gflop / time / 1e3, std::stod(cells[20]), 0.01 * std::stod(cells[20])) << row;
}

TEST(CliAnalyzeTest, MoeUnfusedOpsPricesMegatronCoresExpertOps) {
  CliOptions o;
  o.command = "analyze";
  o.model = testing::SourcePath("examples/models/hf/gpt-oss-120b.json");
  o.gpu = "h100-sxm";
  o.pp = 4;
  o.ep = 8;
  o.gpus = 64;
  o.global_batch = 1280;
  const CommandRun fused = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(fused.code, 0) << fused.err;
  EXPECT_THAT(fused.out, Not(HasSubstr("TEGroupedMLP")));
  o.moe_unfused_ops = true;
  const CommandRun unfused = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(unfused.code, 0) << unfused.err;
  EXPECT_THAT(unfused.out, HasSubstr("assumes: the experts' ops as Megatron-Core's TEGroupedMLP"));
  EXPECT_THAT(unfused.out, HasSubstr("the output bias added expert by expert in FP32; the GLU's "
                                     "clamp outside the fused activation"));
  o.format = "json";
  EXPECT_THAT(RunCommandForTest(cli::DoAnalyze, o).out, HasSubstr("TEGroupedMLP"));
  // --mtp-layers prices DeepSeek-V3's multi-token prediction module and says so.
  o.format = "table";
  o.moe_unfused_ops = false;
  o.mtp_layers = 1;
  EXPECT_THAT(RunCommandForTest(cli::DoAnalyze, o).out,
              HasSubstr("assumes: multi-token prediction (mtp_layers 1) on the last pipeline stage"));
}

// Under context parallelism the FLOPs line says the whole model's count is the micro-batch's
// tokens over every CP rank, and how many of them a rank runs.
TEST(CliAnalyzeTest, TheFlopsLineCountsTheWholeSequenceUnderContextParallelism) {
  CliOptions o = Llama70b();
  o.seq = 32768;
  o.cp = 4;
  o.tp = 8;
  const CommandRun r = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("per rank of the 32 splitting each layer (TP 8 × CP 4: each rank "
                               "1/4 of the sequence)"));
  EXPECT_THAT(r.out, HasSubstr("32768 tokens (8192 a rank)"));
}

// Under ZeRO-3 the step table's data-parallel row holds the weights' gathers too (and FSDP2's
// copies with --zero3-prefetch): it is named for FSDP.
TEST(CliAnalyzeTest, TheStepTableNamesFsdpsRow) {
  CliOptions o = Llama70b();
  o.gpus = 64;
  o.zero_stage = 3;
  o.zero3_prefetch = true;
  const CommandRun r = RunCommandForTest(cli::DoAnalyze, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("FSDP gathers and reduces"));
  EXPECT_THAT(r.out, Not(HasSubstr("\nDP communication ")));
  EXPECT_THAT(r.out, HasSubstr("counted with them in the step's FSDP row"));
}

TEST(CliAnalyzeTest, BadRunFlagsAreUsageErrorsNamingTheFlag) {
  CliOptions o = Llama70b();
  o.gpus = 8;
  o.recompute = "some";
  CommandRun r = RunCommandForTest(cli::DoAnalyze, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--recompute: \"some\" is not one of: none, selective, full, op"));
  o = Llama70b();
  o.flop_count = "half";
  r = RunCommandForTest(cli::DoAnalyze, o);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--flop-count: \"half\" is not one of: full, causal"));
  // The run's choice flags the service checks are refused before the request, by the flag.
  const std::vector<std::pair<std::string CliOptions::*, std::string>> choices = {
      {&CliOptions::cp_ring, "--cp-ring: unknown value \"ulysses\"; allowed: te"},
      {&CliOptions::loss, "--loss: unknown value \"ulysses\"; allowed: fused, eager"},
      {&CliOptions::fp8_recipe, "--fp8-recipe: unknown value \"ulysses\""},
      {&CliOptions::ep_dispatcher, "--ep-dispatcher: unknown value \"ulysses\""},
      {&CliOptions::network, "--network: unknown value \"ulysses\"; allowed: hdr-ib"}};
  for (const auto& [field, message] : choices) {
    o = Llama70b();
    o.*field = "ulysses";
    r = RunCommandForTest(cli::DoAnalyze, o);
    EXPECT_EQ(r.code, 2) << message;
    EXPECT_THAT(r.err, HasSubstr(message));
  }
}

}  // namespace
}  // namespace wavecrest
