// Analyses and runs between their protos and the core (service/convert_run.cc): the Analyze
// response's GEMMs and step band, a run validated with every violation named, the step's
// breakdown.
#include <vector>

#include "core/analysis.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

TEST(ConvertRunTest, ARunsFieldsAndDefaults) {
  v1::RunConfig r;
  r.set_num_gpus(64);
  r.set_global_batch(1024);
  r.set_recompute(v1::RECOMPUTE_SELECTIVE);
  r.set_no_pp_overlap(true);
  absl::StatusOr<RunConfig> c = FromProto(r, "run.");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_gpus, 64);
  EXPECT_EQ(c->interleave, 1);  // 0 reads as 1
  EXPECT_EQ(c->recompute, Recompute::kSelective);
  EXPECT_FALSE(c->pp_overlap);
  EXPECT_TRUE(c->reshard_after_forward);
  // TorchTitan's op-level policy both ways.
  EXPECT_FALSE(c->eager);
  r.set_recompute(v1::RECOMPUTE_OP);
  r.set_eager(true);
  r.set_fsdp_shard(8);
  r.set_recompute_mla_up_proj(true);
  c = FromProto(r, "run.");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->recompute, Recompute::kOp);
  EXPECT_TRUE(c->eager);
  EXPECT_EQ(c->fsdp_shard, 8);
  EXPECT_TRUE(c->recompute_mla_up_proj);
  StepBreakdown b;
  b.recompute = Recompute::kOp;
  EXPECT_EQ(ToProto(b).recompute(), v1::RECOMPUTE_OP);
}

TEST(ConvertRunTest, EveryBadFieldIsAViolationUnderThePrefix) {
  v1::RunConfig r;
  r.set_recompute(static_cast<v1::Recompute>(9));
  r.set_num_gpus(-1);
  r.set_zero_stage(4);
  r.set_gradient_bytes(3);
  r.set_dp_overlap(1.5);
  absl::StatusOr<RunConfig> c = FromProto(r, "run.");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(ViolationsOf(c.status()),
              ElementsAre(Field(&FieldViolation::field, "run.recompute"),
                          Field(&FieldViolation::field, "run.num_gpus"),
                          Field(&FieldViolation::field, "run.zero_stage"),
                          Field(&FieldViolation::field, "run.gradient_bytes"),
                          Field(&FieldViolation::field, "run.dp_overlap")));
}

TEST(ConvertRunTest, TheStepsRecomputationAndDegrees) {
  StepBreakdown b;
  b.gpus = 16;
  b.tensor_parallel = 8;
  b.data_parallel = 2;
  b.recompute = Recompute::kFull;
  b.step_s = 1.25;
  b.assumptions = {"a"};
  const v1::StepBreakdown p = ToProto(b);
  EXPECT_EQ(p.gpus(), 16);
  EXPECT_EQ(p.tensor_parallel(), 8);
  EXPECT_EQ(p.recompute(), v1::RECOMPUTE_FULL);
  EXPECT_EQ(p.step_time_s(), 1.25);
  ASSERT_EQ(p.assumptions_size(), 1);
}

// The step's band is the GEMMs' bands weighted by their share of the step.
TEST(ConvertRunTest, AnAnalysisCarriesEachGemmAndTheStepsBand) {
  ModelSpec s;
  s.hidden_size = 2048;
  s.num_attention_heads = 16;
  s.num_layers = 4;
  s.ffn_hidden_size = 8192;
  s.vocab_size = 50304;
  s.seq_length = 2048;
  s.micro_batch_size = 1;
  s = WithDefaults(s);
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  absl::StatusOr<Analysis> a = Analyze(s, gpu);
  ASSERT_TRUE(a.ok()) << a.status();
  const v1::AnalyzeResponse r = ToProto(*a);
  ASSERT_EQ(r.gemms_size(), static_cast<int>(a->gemms.size()));
  double p10 = 0;
  for (size_t i = 0; i < a->gemms.size(); ++i) {
    const GemmAnalysis& g = a->gemms[i];
    EXPECT_EQ(r.gemms(i).m_alignment().largest_pow2(), g.m_align.pow2);
    EXPECT_EQ(r.gemms(i).k_alignment().meets_rule(), g.k_align.meets_rule);
    EXPECT_EQ(r.gemms(i).time_s(), g.prediction.time_s);
    p10 += g.prediction.time_s * static_cast<double>(g.gemm.count) / a->step_time_s *
           g.prediction.band_p10;
  }
  EXPECT_DOUBLE_EQ(r.provenance().error_band_p10(), p10);
  EXPECT_EQ(r.rules_size(), static_cast<int>(a->rules.size()));
}

}  // namespace
}  // namespace wavecrest
