// The checks of a training run against its model and the ranks it implies (core/run_check.h).
#include "core/run_check.h"

#include <string>

#include "core/analysis.h"
#include "core/gpu_catalog.h"
#include "core/parallelism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

using testing::Llama70B;

// 64 GPUs at t = 8, p = 4: d = 2; a global batch of 16 with b = 1 is 8 micro-batches per step,
// and without one, p micro-batches (the fewest that fill the pipeline).
TEST(RunCheckTest, RanksFollowFromTheGpusAndTheGlobalBatch) {
  const ModelSpec s = *NormalizeSpec(Llama70B(8, 4));
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 16;
  int64_t d = 0, m = 0;
  ASSERT_TRUE(CheckRun(s, run, 32, &d, &m).ok());
  EXPECT_EQ(d, 2);
  EXPECT_EQ(m, 8);
  run.global_batch = 0;
  ASSERT_TRUE(CheckRun(s, run, 32, &d, &m).ok());
  EXPECT_EQ(m, 4);
  // Without num_gpus, the spec's data parallelism.
  ModelSpec spec_dp = s;
  spec_dp.data_parallel = 3;
  run.num_gpus = 0;
  ASSERT_TRUE(CheckRun(spec_dp, run, 32, &d, &m).ok());
  EXPECT_EQ(d, 3);
}

TEST(RunCheckTest, SettingsOutOfRangeAreRefusedNamingTheField) {
  const ModelSpec s = *NormalizeSpec(Llama70B(8, 1));
  int64_t d = 0, m = 0;
  auto refusal = [&](const RunConfig& run) {
    return std::string(CheckRun(s, run, 8, &d, &m).message());
  };
  RunConfig run;
  run.zero_stage = 4;
  EXPECT_THAT(refusal(run), HasSubstr("run.zero_stage: must be 0, 1, 2 or 3; got 4"));
  run = RunConfig();
  run.gradient_bytes = 3;
  EXPECT_THAT(refusal(run), HasSubstr("run.gradient_bytes"));
  run = RunConfig();
  run.tp_overlap = 1.5;
  EXPECT_THAT(refusal(run), HasSubstr("run.tp_overlap"));
  run = RunConfig();
  run.dp_overlap = -0.1;
  EXPECT_THAT(refusal(run), HasSubstr("run.dp_overlap"));
  run = RunConfig();
  run.fp8_param_gather = true;  // a BF16 model
  EXPECT_THAT(refusal(run), HasSubstr("run.fp8_param_gather: needs dtype fp8_e4m3"));
  EXPECT_TRUE(CheckRun(s, RunConfig(), 8, &d, &m).ok());
}

TEST(RunCheckTest, PlanStepRefusesARunTheModelCannotHaveNamingTheField) {
  const Analysis a = *Analyze(Llama70B(8, 4), **FindGpu("h100-sxm"));
  RunConfig run;
  run.num_gpus = 48 + 4;
  EXPECT_THAT(std::string(PlanStep(a, run).status().message()), HasSubstr("run.num_gpus"));
  run.num_gpus = 64;
  run.global_batch = 3;
  EXPECT_THAT(std::string(PlanStep(a, run).status().message()), HasSubstr("run.global_batch"));
  run.global_batch = 0;
  run.interleave = 3;  // 20 layers per stage
  EXPECT_THAT(std::string(PlanStep(a, run).status().message()), HasSubstr("run.interleave"));
}

}  // namespace
}  // namespace wavecrest
