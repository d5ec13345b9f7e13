#include "core/minimal_candidates.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;

// GPT-3 2.7B as the paper trains it (h 2560, 32 heads of 80, 32 layers, GELU, vocabulary 50257).
ModelSpec Gpt3_27b() {
  ModelSpec s = testing::Pythia28(Attention::kFlash);
  s.vocab_size = 50257;
  s.tied_embeddings = true;
  return *NormalizeSpec(s);
}

// The reshape the issue saw ride along with a vocabulary pad: h 2560 → 2688 with 24 heads of 112
// and 29 layers (the MLP width follows h). None of h, the heads or the layers can be undone
// alone (the head dim does not divide the other width; the layers alone break the budget), so
// they are one bundle; the pad is a change of its own.
TEST(MinimalCandidatesTest, CoupledChangesAreOneBundleAndEveryShapeWithoutOneIsLegal) {
  const ModelSpec base = Gpt3_27b();
  ModelSpec c = base;
  c.hidden_size = 2688;
  c.num_attention_heads = 24;
  c.num_kv_heads = 24;
  c.head_dim = 112;
  c.ffn_hidden_size = 10752;
  c.num_layers = 29;
  c.vocab_size = 50304;
  RecommendConstraints rc;
  rc.tensor_parallel_options = {1};
  rc.vary = {Knob::kKvCache};  // the reshape's cache is 5% smaller: released to look at it
  const CandidateRules rules(base, rc);
  ASSERT_TRUE(rules.Admit(c).has_value());
  const std::vector<CandidateChange> changes = ChangesOf(c, rules);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].words, "v 50257 → 50304");
  EXPECT_TRUE(changes[0].parts.empty());
  EXPECT_EQ(changes[0].without.vocab_size, 50257);
  EXPECT_EQ(changes[0].without.hidden_size, 2688);
  EXPECT_THAT(changes[1].parts,
              ElementsAre("h 2560 → 2688", "a 32 → 24: h/a 80 → 112", "L 32 → 29"));
  EXPECT_EQ(changes[1].words, "h 2560 → 2688 + a 32 → 24: h/a 80 → 112 + L 32 → 29");
  // Without the bundle: the baseline with its vocabulary padded.
  ModelSpec pad = base;
  pad.vocab_size = 50304;
  EXPECT_EQ(changes[1].without, *rules.Admit(pad));
  for (const CandidateChange& ch : changes) {
    EXPECT_TRUE(rules.Admit(ch.without).has_value()) << ch.words;
  }
}

// A change every part of which can be undone alone is no bundle; an MLP width that follows the
// hidden size is not a change of its own, and one that moved on its own is.
TEST(MinimalCandidatesTest, SingleChangesStaySingle) {
  const ModelSpec base = Gpt3_27b();
  RecommendConstraints rc;
  rc.tensor_parallel_options = {1};
  const CandidateRules rules(base, rc);
  ModelSpec c = base;
  c.num_attention_heads = 20;
  c.num_kv_heads = 20;
  c.head_dim = 128;
  c.ffn_hidden_size = 10304;
  const std::vector<CandidateChange> changes = ChangesOf(c, rules);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].words, "a 32 → 20: h/a 80 → 128");
  EXPECT_EQ(changes[0].without.head_dim, 80);
  EXPECT_EQ(changes[0].without.ffn_hidden_size, 10304);
  EXPECT_EQ(changes[1].words, "f 10240 → 10304");
  EXPECT_EQ(changes[1].without.head_dim, 128);
  EXPECT_EQ(changes[1].without.ffn_hidden_size, 10240);
}

// Bundles that share a change are one: Pythia-2.8B at h 2496 with 26 heads of 96, 33 layers and
// an MLP width of its own (10048, not the 9984 h implies). The width alone breaks the budget, so
// its smallest bundle holds h, the heads and the layers too: one bundle of four, whose shape
// without it is the baseline, and each change in exactly one bundle.
TEST(MinimalCandidatesTest, BundlesThatShareAChangeAreOne) {
  const ModelSpec base = testing::Pythia28(Attention::kUnfused);
  ModelSpec c = base;
  c.hidden_size = 2496;
  c.num_attention_heads = 26;
  c.num_kv_heads = 26;
  c.head_dim = 96;
  c.ffn_hidden_size = 10048;
  c.num_layers = 33;
  RecommendConstraints rc;
  rc.tensor_parallel_options = {1, 2};
  const CandidateRules rules(base, rc);
  ASSERT_TRUE(rules.Admit(c).has_value());
  const std::vector<CandidateChange> changes = ChangesOf(c, rules);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_THAT(changes[0].parts, ElementsAre("h 2560 → 2496", "a 32 → 26: h/a 80 → 96",
                                            "f 10240 → 10048", "L 32 → 33"));
  EXPECT_EQ(changes[0].without, base);
}

// Degrees the baseline breaks (its 32 heads at TP 64): the baseline is no candidate, so the head
// change that meets them cannot be undone: one required change, its shape without it the
// baseline; the MLP width beside it stays a change of its own, undone into a legal shape.
TEST(MinimalCandidatesTest, AChangeTheDegreesAskedNeedIsRequired) {
  const ModelSpec base = Gpt3_27b();
  RecommendConstraints rc;
  rc.tensor_parallel_options = {1, 64};
  const CandidateRules rules(base, rc);
  EXPECT_FALSE(rules.Admit(base).has_value());
  ModelSpec c = base;
  c.num_attention_heads = 64;
  c.num_kv_heads = 64;
  c.head_dim = 40;
  c.ffn_hidden_size = 10304;
  RecommendConstraints loose = rc;
  loose.vary = {Knob::kHeadDim};
  const CandidateRules loose_rules(base, loose);
  ASSERT_TRUE(loose_rules.Admit(c).has_value());
  const std::vector<CandidateChange> changes = ChangesOf(c, loose_rules);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_TRUE(changes[0].required);
  EXPECT_EQ(changes[0].words, "a 32 → 64: h/a 80 → 40");
  EXPECT_EQ(changes[0].without, base);
  ASSERT_TRUE(changes[0].alone.has_value());  // the head change alone: the width undone
  EXPECT_EQ(changes[0].alone->num_attention_heads, 64);
  EXPECT_EQ(changes[0].alone->ffn_hidden_size, 10240);
  EXPECT_FALSE(changes[1].required);
  EXPECT_EQ(changes[1].words, "f 10240 → 10304");
  EXPECT_EQ(changes[1].without.num_attention_heads, 64);
  EXPECT_TRUE(loose_rules.Admit(changes[1].without).has_value());
  // Without degrees the baseline breaks, nothing is required.
  RecommendConstraints one;
  one.tensor_parallel_options = {1};
  one.vary = {Knob::kHeadDim};
  for (const CandidateChange& ch : ChangesOf(c, CandidateRules(base, one))) {
    EXPECT_FALSE(ch.required) << ch.words;
  }
}

TEST(MinimalCandidatesTest, EarningItsKeepNeedsMoreThanTheUncertaintyAndHalfAPercent) {
  EXPECT_TRUE(EarnsItsKeep(1.10, 0.05));
  EXPECT_FALSE(EarnsItsKeep(1.04, 0.05));
  EXPECT_FALSE(EarnsItsKeep(1.004, 0));
  EXPECT_TRUE(EarnsItsKeep(1.006, 0));
}

}  // namespace
}  // namespace wavecrest
