// An Analyze answer's rendering (client/format_analysis.cc): the header, the GEMMs' table with
// alignment marks, parameters, the slow GEMMs and the rules broken.
#include <string>

#include "client/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

v1::AnalyzeResponse SmallAnswer() {
  v1::AnalyzeResponse r;
  v1::ModelSpec* m = r.mutable_model();
  m->set_name("tiny");
  m->set_hidden_size(1000);
  m->set_num_attention_heads(10);
  m->set_num_kv_heads(10);
  m->set_head_dim(100);
  m->set_num_layers(2);
  m->set_ffn_hidden_size(4000);
  m->set_vocab_size(50257);
  m->set_seq_length(2048);
  m->set_micro_batch_size(1);
  m->set_tensor_parallel(1);
  m->set_dtype(v1::DTYPE_BF16);
  m->set_workload(v1::WORKLOAD_TRAINING);
  r.set_gpu("h100-sxm");
  v1::GemmAnalysis* g = r.add_gemms();
  g->mutable_gemm()->set_name("qkv");
  g->mutable_gemm()->set_pass(v1::PASS_WGRAD);
  g->mutable_gemm()->set_count(2);
  g->mutable_gemm()->set_layout(v1::LAYOUT_NT);
  g->mutable_m_alignment()->set_largest_pow2(8);
  g->mutable_m_alignment()->set_meets_rule(false);
  g->mutable_n_alignment()->set_largest_pow2(2048);
  g->mutable_n_alignment()->set_meets_rule(true);
  g->set_bound(v1::BOUND_MEMORY);
  g->set_time_s(1e-3);
  g->add_penalties("h/a = 100: largest power-of-two factor 4 < 64");
  v1::RuleViolation* rule = r.add_rules();
  rule->set_paper_rule(1);
  rule->set_message("vocabulary not a multiple of 64");
  return r;
}

TEST(FormatAnalysisTest, TheHeaderTheTableAndTheRules) {
  const std::string out = FormatAnalysis(SmallAnswer());
  EXPECT_THAT(out, HasSubstr("tiny on h100-sxm: h=1000 a=10 a_kv=10 d=100 L=2 f=4000 (gelu) "
                             "v=50257 s=2048 b=1 t=1 bf16, flash attention, training step\n"));
  EXPECT_THAT(out, HasSubstr("wgrad"));
  EXPECT_THAT(out, HasSubstr("NT"));
  EXPECT_THAT(out, HasSubstr("8!"));  // misses the alignment rule
  EXPECT_THAT(out, HasSubstr("2K"));
  EXPECT_THAT(out, HasSubstr("memory"));
  EXPECT_THAT(out, HasSubstr("why GEMMs are slow (largest share of the step first):\n"
                             "  qkv wgrad: h/a = 100: largest power-of-two factor 4 < 64\n"));
  EXPECT_THAT(out, HasSubstr("rules broken:\n  [rule 1, not priced] vocabulary not a multiple "
                             "of 64\n"));
}

TEST(FormatAnalysisTest, NoRulesBrokenSaysSo) {
  v1::AnalyzeResponse r = SmallAnswer();
  r.clear_rules();
  EXPECT_THAT(FormatAnalysis(r), HasSubstr("rules           none broken\n"));
}

TEST(FormatAnalysisTest, AMixtureOfExpertsShowsItsArchitectureAndActiveParameters) {
  v1::AnalyzeRequest request;
  absl::StatusOr<v1::ModelSpec> model =
      LoadModelFile(testing::SourcePath("examples/models/hf/mixtral-8x7b.json"));
  ASSERT_TRUE(model.ok()) << model.status();
  *request.mutable_model() = *model;
  request.set_gpu("h100-sxm");
  absl::StatusOr<v1::AnalyzeResponse> r = HandleAnalyze(request);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string out = FormatAnalysis(*r);
  EXPECT_THAT(out, HasSubstr("; MoE: 8 experts of f, top 2"));
  EXPECT_THAT(out, HasSubstr("active per token (mixture of experts: 8 experts, top 2)"));
}

}  // namespace
}  // namespace wavecrest
