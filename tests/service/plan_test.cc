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

// A request for an example model on an H100 SXM.
v1::AnalyzeRequest ExampleOnH100(const std::string& file) {
  v1::AnalyzeRequest r;
  absl::StatusOr<v1::ModelSpec> m =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/" + file);
  EXPECT_TRUE(m.ok()) << m.status();
  *r.mutable_model() = *m;
  r.set_gpu("h100-sxm");
  return r;
}

v1::AnalyzeRequest Llama70b() {
  v1::AnalyzeRequest r = ExampleOnH100("llama-3-70b.json");
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
  // The layout search (TP held at 8, the pipeline searched) says its choice first, then the
  // micro-batch's.
  ASSERT_GT(planned->step().assumptions_size(), 1);
  EXPECT_THAT(planned->step().assumptions(0), ::testing::HasSubstr("(held as given: TP 8)"));
  EXPECT_THAT(planned->step().assumptions(1),
              ::testing::HasSubstr(absl::StrCat("planned: micro-batch ", b, " of 1, 2, 4 (")));
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

namespace wavecrest {
namespace {

// Issue 54 item 2: `--plan --gpus 512 --global-batch 1024` chooses the degrees itself; the answer
// is its fastest layout that fits, ranked first among the layouts shown, each other saying why it
// loses; a layout given by flags that does not fit says so and shows the plan that fits.
TEST(PlanTest, PlanOnGpusSearchesTheLayoutAndAGivenLayoutThatDoesNotFitShowsThePlan) {
  v1::AnalyzeRequest q = Llama70b();
  q.mutable_model()->set_tensor_parallel(1);
  q.mutable_run()->set_num_gpus(512);
  q.mutable_run()->set_global_batch(1024);
  q.mutable_run()->set_plan(true);
  q.mutable_run()->set_train_tokens(15e12);
  const absl::StatusOr<v1::AnalyzeResponse> planned = HandleAnalyze(q);
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_GE(planned->layouts_size(), 2);
  EXPECT_GT(planned->layouts_examined(), 10);
  const v1::StepBreakdown& best = planned->layouts(0).step();
  EXPECT_TRUE(best.memory().fits());
  EXPECT_DOUBLE_EQ(planned->step().step_time_s(), best.step_time_s());
  EXPECT_EQ(planned->step().tensor_parallel(), best.tensor_parallel());
  // The kernels are analysed at the chosen layout.
  EXPECT_EQ(planned->model().tensor_parallel(), best.tensor_parallel());
  EXPECT_THAT(planned->step().assumptions(0), ::testing::HasSubstr("planned layout: TP "));
  for (int i = 1; i < planned->layouts_size(); ++i) {
    EXPECT_FALSE(planned->layouts(i).why().empty());
  }
  EXPECT_GT(planned->step().time_to_train_s(), 0);
  EXPECT_NEAR(planned->step().gpu_hours(), planned->step().time_to_train_s() * 512 / 3600, 1);

  // The layout as given: TP 8 × PP 4 at micro-batch 1, 104 GiB of 80.
  v1::AnalyzeRequest given = Llama70b();
  given.mutable_model()->set_pipeline_parallel(4);
  given.mutable_run()->set_num_gpus(512);
  given.mutable_run()->set_global_batch(1024);
  const absl::StatusOr<v1::AnalyzeResponse> r = HandleAnalyze(given);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->step().memory().fits());
  ASSERT_GE(r->layouts_size(), 1);
  EXPECT_TRUE(r->layouts(0).step().memory().fits());
  EXPECT_THAT(r->step().assumptions(0), ::testing::HasSubstr("does NOT fit in memory as given"));
  EXPECT_THAT(r->step().assumptions(0), ::testing::HasSubstr("not a run that can start"));
  // The search's answer is the same plan `--plan` gives for that request: the degrees it states
  // (TP 8, PP 4) held.
  v1::AnalyzeRequest given_planned = given;
  given_planned.mutable_run()->set_plan(true);
  const absl::StatusOr<v1::AnalyzeResponse> gp = HandleAnalyze(given_planned);
  ASSERT_TRUE(gp.ok()) << gp.status();
  ASSERT_GE(gp->layouts_size(), 1);
  EXPECT_DOUBLE_EQ(r->layouts(0).step().step_time_s(), gp->layouts(0).step().step_time_s());
  EXPECT_EQ(r->layouts(0).step().pipeline_parallel(), 4);
  EXPECT_THAT(r->step().assumptions(0), ::testing::HasSubstr("(held as given: TP 8, PP 4)"));

  // Degrees kept: the layout as given, planned for the rest, no search.
  given.mutable_run()->set_plan(true);
  given.mutable_run()->set_keep_degrees(true);
  const absl::StatusOr<v1::AnalyzeResponse> kept = HandleAnalyze(given);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->layouts_size(), 0);
  EXPECT_EQ(kept->step().tensor_parallel(), 8);
  EXPECT_EQ(kept->step().pipeline_parallel(), 4);

  // A run is training: a decode request with a plan is refused as a run, not searched.
  q.mutable_model()->set_workload(v1::WORKLOAD_DECODE);
  const absl::StatusOr<v1::AnalyzeResponse> decode = HandleAnalyze(q);
  ASSERT_FALSE(decode.ok());
  EXPECT_THAT(std::string(decode.status().message()), ::testing::HasSubstr("training"));
}

// A layout past the share of the GPU the plan leaves to the model but within the GPU (Llama 3 8B
// at 8k with CP 2 on 8 H100s, as NVIDIA's DGX Cloud recipe ran it) is not called one that cannot
// start: published layouts that ran reach there.
TEST(PlanTest, ALayoutPastTheMarginButWithinTheGpuMayNotStart) {
  v1::AnalyzeRequest q = ExampleOnH100("llama-3-8b.json");
  q.mutable_model()->set_seq_length(8192);
  q.mutable_model()->set_micro_batch_size(1);
  q.mutable_model()->set_context_parallel(2);
  q.mutable_run()->set_num_gpus(8);
  q.mutable_run()->set_global_batch(128);
  q.mutable_run()->set_zero_stage(1);
  const absl::StatusOr<v1::AnalyzeResponse> r = HandleAnalyze(q);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->step().memory().fits());
  ASSERT_LE(r->step().memory().total_bytes(), r->step().memory().capacity_bytes());
  EXPECT_THAT(r->step().assumptions(0), ::testing::HasSubstr("it may not start"));
  EXPECT_THAT(r->step().assumptions(0),
              ::testing::Not(::testing::HasSubstr("not a run that can start")));
}

}  // namespace
}  // namespace wavecrest
