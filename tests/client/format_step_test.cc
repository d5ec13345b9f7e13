// The training step's rendering (client/format_step.cc): the headline, the components a run has,
// the figures, the layout line, and a layout search's answer.
#include <string>

#include "client/format.h"
#include "client/format_internal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::StepBreakdown Step() {
  v1::StepBreakdown b;
  b.set_gpus(64);
  b.set_nodes(8);
  b.set_tensor_parallel(8);
  b.set_pipeline_parallel(4);
  b.set_data_parallel(2);
  b.set_global_batch(1024);
  b.set_microbatches(512);
  b.set_compute_s(1.5);
  b.set_optimizer_s(0.5);
  b.set_step_time_s(2);
  b.set_mfu(0.4);
  b.set_recompute(v1::RECOMPUTE_SELECTIVE);
  b.set_zero_stage(1);
  b.mutable_memory()->set_total_bytes(40.0 * (1 << 30));
  b.mutable_memory()->set_capacity_bytes(80.0 * (1 << 30));
  b.mutable_memory()->set_fits(true);
  b.add_assumptions("one assumption");
  return b;
}

TEST(FormatStepTest, ShowsTheComponentsTheRunHasAndTheirShares) {
  const std::string out = FormatStepBreakdown(Step());
  EXPECT_THAT(out, HasSubstr("training step on 64 GPUs (8 nodes): t=8 p=4 d=2, global batch 1024 "
                             "= 512 micro-batches per data-parallel rank; PREDICTED\n"));
  EXPECT_THAT(out, HasSubstr("compute"));
  EXPECT_THAT(out, HasSubstr("75.0%"));  // 1.5 s of 2
  EXPECT_THAT(out, HasSubstr("25.0%"));
  // No expert or context parallelism, no offload: their rows are left out.
  EXPECT_THAT(out, Not(HasSubstr("EP all-to-all")));
  EXPECT_THAT(out, Not(HasSubstr("CP communication")));
  EXPECT_THAT(out, Not(HasSubstr("activation offload")));
  EXPECT_THAT(out, Not(HasSubstr("time to train")));
  EXPECT_THAT(out, HasSubstr("MFU 40.0%"));
  EXPECT_THAT(out, HasSubstr("layout: no sequence parallelism, selective recomputation, ZeRO "
                             "stage 1, micro-batch 1; memory per GPU 40.0 GiB of 80"));
  EXPECT_THAT(out, HasSubstr("; fits\n  assumes: one assumption\n"));
}

TEST(FormatStepTest, ExpertParallelismAndTrainingTimeAddTheirLines) {
  v1::StepBreakdown b = Step();
  b.set_expert_parallel(4);
  b.set_ep_comm_s(0.1);
  b.set_train_tokens(1e12);
  b.set_time_to_train_s(86400 * 2);
  b.set_gpu_hours(3072);
  const std::string out = FormatStepBreakdown(b);
  EXPECT_THAT(out, HasSubstr("d=2 (e=4 of them)"));
  EXPECT_THAT(out, HasSubstr("EP all-to-all"));
  EXPECT_THAT(out, HasSubstr("time to train  1.00T tokens: 2.0 days (48 hours)"));
}

// The error band's line, and on a GPU none of its runs was on, that it is unchecked there.
TEST(FormatStepTest, TheErrorBandSaysWhenItsRunsWereOnOtherGpus) {
  v1::StepBreakdown b = Step();
  b.set_error_band_p10(-0.08);
  b.set_error_band_p90(0.07);
  b.set_error_band_runs(127);
  b.set_error_band_kind("dense");
  b.add_error_band_gpus("a100-sxm-80gb");
  b.add_error_band_gpus("h100-sxm");
  b.set_error_band_gpu_checked(true);
  EXPECT_THAT(FormatStepBreakdown(b),
              HasSubstr("error band: a measured step -8% .. +7% off this prediction (p10..p90 of "
                        "127 published dense runs the planner was checked against)\n"));
  EXPECT_THAT(FormatStepBreakdown(b), Not(HasSubstr("none on this GPU")));
  b.set_error_band_gpu_checked(false);
  EXPECT_THAT(FormatStepBreakdown(b),
              HasSubstr("those runs were on a100-sxm-80gb, h100-sxm, none on this GPU"));
}

TEST(FormatStepTest, MemoryPartsListsWhatIsThere) {
  v1::MemoryEstimate m;
  m.set_total_bytes(10.0 * (1 << 30));
  m.set_capacity_bytes(80.0 * (1 << 30));
  m.set_weights_bytes(2.0 * (1 << 30));
  m.set_activations_bytes(8.0 * (1 << 30));
  EXPECT_EQ(MemoryParts(m),
            "memory per GPU 10.0 GiB of 80 (estimate): weights 2.0, gradients 0.0, optimizer "
            "0.0, activations 8.0");
  m.set_kv_cache_bytes(1.0 * (1 << 30));
  EXPECT_THAT(MemoryParts(m), HasSubstr(", KV cache 1.0"));
  // A pipeline's fullest stage, named when it is not the first.
  m.set_stage(7);
  EXPECT_THAT(MemoryParts(m),
              HasSubstr("10.0 GiB of 80 (estimate, pipeline stage 7 from 0, the fullest): "));
}

// A run as given that does not fit is not the answer: the searched plan that fits is.
TEST(FormatStepTest, ARunThatDoesNotFitAnswersWithThePlanThatDoes) {
  v1::AnalyzeResponse r;
  *r.mutable_step() = Step();
  r.mutable_step()->mutable_memory()->set_fits(false);
  r.set_step_time_s(2);
  v1::LayoutOption* plan = r.add_layouts();
  plan->set_rank(1);
  *plan->mutable_step() = Step();
  plan->mutable_step()->set_step_time_s(1.5);
  r.set_layouts_examined(10);
  r.set_layouts_fit(3);
  // Beyond the GPU: it cannot start.
  r.mutable_step()->mutable_memory()->set_total_bytes(
      r.step().memory().capacity_bytes() + 1);
  const std::string out = RunAnswer(r);
  EXPECT_THAT(out, HasSubstr("as given        2.000 s per step, but it does NOT fit in memory"));
  EXPECT_THAT(out, HasSubstr("the answer      1.500 s per step"));
  // Past the plan's margin but within the GPU: it may not start, and the layout line says so.
  r.mutable_step()->mutable_memory()->set_total_bytes(r.step().memory().capacity_bytes() * 0.95);
  EXPECT_THAT(RunAnswer(r), HasSubstr("past the share the plan leaves to the model (it may not "
                                      "start)"));
  EXPECT_THAT(FormatStepBreakdown(r.step()), HasSubstr("within the GPU itself: it may not start"));
  EXPECT_THAT(out, HasSubstr("(the run: TP 8 × PP 4 × DP 2)"));
  EXPECT_THAT(out, HasSubstr("layouts searched: 10 degree combinations, 3 fit in memory"));
  EXPECT_THAT(out, HasSubstr("the answer\n"));
}

}  // namespace
}  // namespace wavecrest
