// Plans as one answer (issue 36, item 7): when a request describes a run (run set, or pipeline,
// data or context parallelism in the model), the top-level step time, MFU, tokens/s and memory
// are the run's, and one rank's kernels keep their own name.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "absl/strings/str_cat.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

v1::AnalyzeRequest Llama70b() {
  v1::AnalyzeRequest r;
  absl::StatusOr<v1::ModelSpec> m =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/llama-3-70b.json");
  EXPECT_TRUE(m.ok()) << m.status();
  *r.mutable_model() = *m;
  r.set_gpu("h100-sxm");
  r.mutable_model()->set_tensor_parallel(8);
  return r;
}

TEST(PlanTest, ParallelismInTheModelIsARunAndTheAnswerIsTheRuns) {
  v1::AnalyzeRequest q = Llama70b();
  const absl::StatusOr<v1::AnalyzeResponse> rank = HandleAnalyze(q);
  ASSERT_TRUE(rank.ok()) << rank.status();
  EXPECT_FALSE(rank->has_step());  // TP alone: one rank's kernels are the answer
  EXPECT_DOUBLE_EQ(rank->step_time_s(), rank->kernels().step_time_s());
  EXPECT_DOUBLE_EQ(rank->mfu(), rank->kernels().mfu());

  q.mutable_model()->set_pipeline_parallel(4);
  q.mutable_model()->set_data_parallel(2);
  const absl::StatusOr<v1::AnalyzeResponse> run = HandleAnalyze(q);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->has_step());
  EXPECT_EQ(run->step().gpus(), 64);
  EXPECT_GT(run->step().pp_bubble_s(), 0);  // the bubble and communication are priced
  EXPECT_GT(run->step().dp_comm_s(), 0);
  EXPECT_DOUBLE_EQ(run->step_time_s(), run->step().step_time_s());
  EXPECT_DOUBLE_EQ(run->mfu(), run->step().mfu());
  EXPECT_DOUBLE_EQ(run->tokens_per_second_per_gpu(), run->step().tokens_per_second_per_gpu());
  EXPECT_EQ(run->memory().SerializeAsString(), run->step().memory().SerializeAsString());
  // One rank's kernels for one micro-batch: the same as without the run, under their own name.
  EXPECT_DOUBLE_EQ(run->kernels().step_time_s(), rank->kernels().step_time_s());
  EXPECT_GT(run->step_time_s(), run->kernels().step_time_s());
  EXPECT_LT(run->mfu(), run->kernels().mfu());
  EXPECT_EQ(run->step().interleave(), 1);  // as given (none)
  // Planned, the layout it chose comes back with the step, the interleave among it.
  q.mutable_run()->set_plan(true);
  q.mutable_run()->set_global_batch(1024);
  const absl::StatusOr<v1::AnalyzeResponse> planned = HandleAnalyze(q);
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_GT(planned->step().interleave(), 1);
  EXPECT_GT(planned->step().pipeline_parallel(), 1);
  EXPECT_EQ(planned->step().micro_batch_size(), 1);  // the model file gives it: kept
}

// A model that leaves the micro-batch unset (a Hugging Face config.json) gets one planned: the
// step, its layout line and one rank's kernels are the chosen micro-batch's, and an assumption
// says what was weighed. Given, it is kept.
TEST(PlanTest, APlannedRunChoosesTheMicroBatchTheModelLeavesUnset) {
  v1::AnalyzeRequest q;
  absl::StatusOr<v1::ModelSpec> m =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf/llama-3-8b.json");
  ASSERT_TRUE(m.ok()) << m.status();
  *q.mutable_model() = *m;
  ASSERT_EQ(q.model().micro_batch_size(), 0);
  q.set_gpu("h100-sxm");
  q.mutable_model()->set_seq_length(4096);
  q.mutable_model()->set_tensor_parallel(8);
  q.mutable_run()->set_num_gpus(512);  // d = 64, one rank per node: the reduction crosses NICs
  q.mutable_run()->set_global_batch(256);  // 4 sequences per data-parallel rank
  q.mutable_run()->set_overlap_grad_reduce(true);
  q.mutable_run()->set_plan(true);
  const absl::StatusOr<v1::AnalyzeResponse> planned = HandleAnalyze(q);
  ASSERT_TRUE(planned.ok()) << planned.status();
  const int64_t b = planned->step().micro_batch_size();
  EXPECT_GT(b, 1);
  EXPECT_EQ(planned->step().microbatches() * b, 4);
  ASSERT_GT(planned->step().assumptions_size(), 0);
  EXPECT_THAT(planned->step().assumptions(0),
              testing::HasSubstr(absl::StrCat("planned: micro-batch ", b, " of 1, 2, 4 (")));
  q.mutable_model()->set_micro_batch_size(1);
  const absl::StatusOr<v1::AnalyzeResponse> given = HandleAnalyze(q);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->step().micro_batch_size(), 1);
  EXPECT_LT(planned->step_time_s(), given->step_time_s());
  // One rank's kernels are for one micro-batch: b sequences take longer than one.
  EXPECT_GT(planned->kernels().step_time_s(), given->kernels().step_time_s());
}

}  // namespace
}  // namespace wavecrest
