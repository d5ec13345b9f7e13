#include "core/rules.h"

#include "core/analysis.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using testing::Pythia28;

using ::testing::Contains;
using ::testing::HasSubstr;

const RuleViolation* Find(const std::vector<RuleViolation>& v, const std::string& id) {
  for (const auto& r : v) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

TEST(RulesTest, HeadDimEightyNamesTheAttentionGemms) {
  ModelSpec s = Pythia28(Attention::kUnfused);
  auto rules = CheckRules(s, BuildGemms(s));
  const RuleViolation* r = Find(rules, "head_dim_pow2");
  ASSERT_NE(r, nullptr);
  EXPECT_THAT(r->message, HasSubstr("h/a = 80: largest power-of-two factor 16 < 64"));
  // Priced by the evidence: 80 pads to 128 in 64-element K slices.
  EXPECT_THAT(r->message, HasSubstr("pads to 128 in the mainloop's 64-element K slices (62%"));
  EXPECT_TRUE(r->priced);
  EXPECT_THAT(r->message, HasSubstr("; hurts attn_score forward (K=80)"));
  EXPECT_THAT(r->hurts, Contains("attn_score forward (K=80)"));
  EXPECT_THAT(r->hurts, Contains("attn_over_value forward (N=80)"));
  EXPECT_EQ(r->paper_rule, 3);
}

TEST(RulesTest, RulesArePricedOnlyWhereTheEvidenceShowsACost) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  // 10922 = 2 · 5461: not a multiple of 16 bytes in BF16 (H100: about 1.46x slower).
  s.ffn_hidden_size = 10922;
  auto rules = CheckRules(*NormalizeSpec(s), BuildGemms(*NormalizeSpec(s)));
  const RuleViolation* r = Find(rules, "ffn_pow2");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->priced);
  EXPECT_THAT(r->message, HasSubstr("not a multiple of 16 bytes"));
  // 10880 = 2^7 · 85: the paper's rule (factor 128 >= 64) holds; 10912 = 2^5 · 341 breaks it, yet
  // it is 16-byte aligned and a whole number of K slices away from nothing: not priced.
  s.ffn_hidden_size = 10912;
  rules = CheckRules(*NormalizeSpec(s), BuildGemms(*NormalizeSpec(s)));
  r = Find(rules, "ffn_pow2");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->priced);
  EXPECT_THAT(r->message, HasSubstr("no measured cost"));
}

TEST(RulesTest, AlignedModelBreaksNone) {
  ModelSpec raw;
  raw.hidden_size = 2560;
  raw.num_attention_heads = 20;  // h/a = 128
  raw.num_layers = 32;
  raw.vocab_size = 50304;
  auto s = NormalizeSpec(raw);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(CheckRules(*s, BuildGemms(*s)).empty());
}

TEST(RulesTest, OddVocabularyIsFlaggedWithPadding) {
  ModelSpec s = Pythia28(Attention::kUnfused);
  s.vocab_size = 50257;
  auto rules = CheckRules(s, BuildGemms(s));
  const RuleViolation* r = Find(rules, "vocab_multiple_of_64");
  ASSERT_NE(r, nullptr);
  EXPECT_THAT(r->message, HasSubstr("pad to 50304"));
  EXPECT_THAT(r->hurts, Contains("logits forward (N=50257)"));
  EXPECT_THAT(r->hurts, Contains("logits dgrad (K=50257)"));
}

TEST(RulesTest, SwigluEightThirdsWidthIsFlagged) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 1;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s = *NormalizeSpec(s);  // f = 10923
  auto rules = CheckRules(s, BuildGemms(s));
  const RuleViolation* r = Find(rules, "ffn_pow2");
  ASSERT_NE(r, nullptr);
  EXPECT_THAT(r->message, HasSubstr("f = 10923: largest power-of-two factor 1 < 64"));
  EXPECT_THAT(r->hurts, Contains("mlp_down forward (K=10923)"));
}

TEST(RulesTest, TokensAndTensorParallelRules) {
  ModelSpec s = Pythia28(Attention::kUnfused);
  s.seq_length = 2000;    // b·s = 2000: factor 16
  s.tensor_parallel = 8;  // h/t = 320: factor 64, fine
  s = *NormalizeSpec(s);
  auto rules = CheckRules(s, BuildGemms(s));
  ASSERT_NE(Find(rules, "tokens_pow2"), nullptr);
  EXPECT_EQ(Find(rules, "hidden_per_tp_pow2"), nullptr);
  s.tensor_parallel = 16;  // h/t = 160: factor 32
  s.num_attention_heads = 32;
  s = *NormalizeSpec(s);
  EXPECT_NE(Find(CheckRules(s, BuildGemms(s)), "hidden_per_tp_pow2"), nullptr);
}

TEST(AnalysisTest, StepTotalsAreConsistent) {
  auto a = Analyze(Pythia28(Attention::kUnfused), **FindGpu("a100-sxm-80gb"));
  ASSERT_TRUE(a.ok()) << a.status();
  double gemm_time = 0, share = 0;
  for (const auto& g : a->gemms) {
    gemm_time += g.prediction.time_s * g.gemm.count;
    share += g.step_flop_share;
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(a->gemm_time_s, gemm_time);
  EXPECT_DOUBLE_EQ(a->step_time_s, a->gemm_time_s + a->elementwise.time_s);
  EXPECT_GT(a->mfu, 0.2);
  EXPECT_LT(a->mfu, 0.87);
  EXPECT_EQ(a->params.total_params, 2'775'208'960);
}

TEST(AnalysisTest, UnsupportedDtypeIsFailedPrecondition) {
  ModelSpec s = Pythia28(Attention::kUnfused);
  s.dtype = DType::kBf16;
  auto a = Analyze(s, **FindGpu("v100-sxm2"));
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("v100-sxm2 cannot run bf16"));
}

}  // namespace
}  // namespace wavecrest
