#include "core/recommend.h"

#include <map>
#include <tuple>

#include "core/analysis.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using testing::Pythia28;

std::vector<CandidateScore> RankPredicted(const ModelSpec& base, const RecommendConstraints& c,
                                          const GpuSpec& gpu) {
  int64_t generated = 0;
  std::vector<ModelSpec> specs = GenerateCandidates(base, c, &generated);
  ScoreCache times([&](const GemmKey& k) {
    return GemmTime{PredictGemm(gpu, k).time_s, 0, false};
  });
  std::vector<CandidateScore> scores;
  const int64_t base_params = CountParams(base).total_params;
  for (size_t i = 0; i < specs.size(); ++i) {
    scores.push_back(ScoreCandidate(specs[i], gpu, times, base_params));
    scores.back().baseline = i == 0;
  }
  RankCandidates(scores);
  return scores;
}

int RankOf(const std::vector<CandidateScore>& scores, int64_t h, int64_t a, int64_t f, int64_t v,
           int64_t L) {
  for (size_t i = 0; i < scores.size(); ++i) {
    const ModelSpec& s = scores[i].spec;
    if (s.hidden_size == h && s.num_attention_heads == a && s.ffn_hidden_size == f &&
        s.vocab_size == v && s.num_layers == L) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The paper's advice for Pythia-2.8B (h = 2560, a = 32, h/a = 80), unfused attention: head counts
// with h/a a multiple of 64 (a = 40: 64, a = 20: 128) rank above a = 32, and a = 64 (h/a = 40)
// ranks below it.
class PaperAdviceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PaperAdviceTest, HeadDimMultipleOf64RanksAbove80) {
  const GpuSpec& gpu = **FindGpu(GetParam());
  RecommendConstraints c;
  c.vary = {Knob::kHeads};
  const auto scores = RankPredicted(Pythia28(Attention::kUnfused), c, gpu);
  const int a32 = RankOf(scores, 2560, 32, 10240, 50304, 32);
  const int a40 = RankOf(scores, 2560, 40, 10240, 50304, 32);
  const int a20 = RankOf(scores, 2560, 20, 10240, 50304, 32);
  const int a64 = RankOf(scores, 2560, 64, 10240, 50304, 32);
  ASSERT_GE(a32, 0);
  ASSERT_GE(a40, 0);
  ASSERT_GE(a20, 0);
  ASSERT_GE(a64, 0);
  EXPECT_LT(a40, a32);
  EXPECT_LT(a20, a32);
  EXPECT_GT(a64, a32);
  EXPECT_TRUE(scores[a32].baseline);
  EXPECT_GT(scores[a20].speedup, 1.0);
  EXPECT_THAT(
      scores[a40].reasons,
      ::testing::Contains(::testing::HasSubstr("h/a 80 → 64 (rule 3: h/a divisible by 64")));
}

INSTANTIATE_TEST_SUITE_P(Gpus, PaperAdviceTest, ::testing::Values("a100-sxm-80gb", "h100-sxm"));

TEST(RecommendTest, Gpt2VocabularyIsPaddedToAMultipleOf64) {
  ModelSpec s;
  s.hidden_size = 768;
  s.num_attention_heads = 12;
  s.num_layers = 12;
  s.vocab_size = 50257;
  s.seq_length = 1024;
  s.tied_embeddings = true;
  s.learned_position_embeddings = 1024;
  s.bias = Bias::kAll;
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    const auto scores = RankPredicted(*NormalizeSpec(s), RecommendConstraints(), **FindGpu(gpu));
    ASSERT_FALSE(scores.empty());
    EXPECT_EQ(scores[0].spec.vocab_size % 64, 0) << gpu;
    EXPECT_FALSE(scores[0].baseline);
    EXPECT_THAT(scores[0].reasons, ::testing::Contains(::testing::HasSubstr("v 50257 → 50304")));
  }
}

TEST(RecommendTest, UnalignedSwigluWidthNeverBeatsAnAlignedNeighbour) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;  // f = ceil(8h/3) = 10923
  s.norm = Norm::kRmsNorm;
  const ModelSpec base = *NormalizeSpec(s);
  RecommendConstraints c;
  c.vary = {Knob::kFfn, Knob::kHeads};
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    const auto scores = RankPredicted(base, c, **FindGpu(gpu));
    int unaligned = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
      const ModelSpec& u = scores[i].spec;
      if (u.ffn_hidden_size % 8 == 0) continue;
      ++unaligned;
      // The nearest aligned width with everything else equal ranks higher.
      int best = -1;
      int64_t dist = 1 << 30;
      for (size_t j = 0; j < scores.size(); ++j) {
        const ModelSpec& o = scores[j].spec;
        if (o.ffn_hidden_size % 8 != 0 || o.num_attention_heads != u.num_attention_heads ||
            o.hidden_size != u.hidden_size || o.vocab_size != u.vocab_size ||
            o.num_layers != u.num_layers) {
          continue;
        }
        const int64_t d = std::abs(o.ffn_hidden_size - u.ffn_hidden_size);
        if (d < dist) dist = d, best = static_cast<int>(j);
      }
      ASSERT_GE(best, 0) << "no aligned neighbour for f=" << u.ffn_hidden_size;
      EXPECT_LT(best, static_cast<int>(i)) << gpu << " f=" << u.ffn_hidden_size;
    }
    EXPECT_GT(unaligned, 0);
  }
}

TEST(RecommendTest, ConstraintsAndToleranceAlwaysHold) {
  const ModelSpec base = Pythia28(Attention::kFlash);
  const int64_t base_params = CountParams(base).total_params;
  struct Case {
    RecommendConstraints c;
    std::function<void(const ModelSpec&)> check;
  };
  std::vector<Case> cases;
  {
    RecommendConstraints c;
    c.param_tolerance = 0.01;
    cases.push_back({c, [&](const ModelSpec& s) {
                       const double d = std::abs(static_cast<double>(CountParams(s).total_params -
                                                                     base_params)) /
                                        base_params;
                       EXPECT_LE(d, 0.01);
                     }});
  }
  {
    RecommendConstraints c;
    c.vary = {Knob::kHeads};
    cases.push_back({c, [&](const ModelSpec& s) {
                       EXPECT_EQ(s.hidden_size, base.hidden_size);
                       EXPECT_EQ(s.ffn_hidden_size, base.ffn_hidden_size);
                       EXPECT_EQ(s.vocab_size, base.vocab_size);
                       EXPECT_EQ(s.num_layers, base.num_layers);
                     }});
  }
  {
    RecommendConstraints c;
    c.keep_layers = true;
    c.allowed_head_dims = {64, 128};
    cases.push_back({c, [&](const ModelSpec& s) {
                       EXPECT_EQ(s.num_layers, base.num_layers);
                       if (s.head_dim != base.head_dim) {
                         EXPECT_TRUE(s.head_dim == 64 || s.head_dim == 128);
                       }
                     }});
  }
  {
    RecommendConstraints c;
    c.min_heads = 16;
    c.max_heads = 32;
    cases.push_back({c, [&](const ModelSpec& s) {
                       EXPECT_GE(s.num_attention_heads, 16);
                       EXPECT_LE(s.num_attention_heads, 32);
                     }});
  }
  {
    RecommendConstraints c;
    c.max_candidates = 7;
    cases.push_back({c, [](const ModelSpec&) {}});
  }
  for (const Case& cs : cases) {
    int64_t generated = 0;
    auto specs = GenerateCandidates(base, cs.c, &generated);
    ASSERT_FALSE(specs.empty());
    EXPECT_EQ(specs[0], base);  // baseline first
    EXPECT_LE(static_cast<int64_t>(specs.size()), cs.c.max_candidates);
    for (const ModelSpec& s : specs) {
      EXPECT_TRUE(Validate(s).empty());
      EXPECT_EQ(s.hidden_size % s.tensor_parallel, 0);
      cs.check(s);
    }
  }
}

TEST(RecommendTest, TensorParallelKeepsShardsIntegral) {
  ModelSpec s = Pythia28(Attention::kFlash);
  s.tensor_parallel = 4;
  s = *NormalizeSpec(s);
  int64_t generated = 0;
  for (const ModelSpec& c : GenerateCandidates(s, RecommendConstraints(), &generated)) {
    EXPECT_EQ(c.num_attention_heads % 4, 0);
    EXPECT_EQ(c.ffn_hidden_size % 4, 0);
    if (c.vocab_size != s.vocab_size) {
      EXPECT_EQ(c.vocab_size % (64 * 4), 0);
    }
  }
}

TEST(RecommendTest, DeterministicRanking) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const auto a = RankPredicted(Pythia28(Attention::kUnfused), RecommendConstraints(), gpu);
  const auto b = RankPredicted(Pythia28(Attention::kUnfused), RecommendConstraints(), gpu);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].spec, b[i].spec);
    EXPECT_EQ(a[i].step_time_s, b[i].step_time_s);
  }
}

TEST(RecommendTest, IdenticalGemmsAreTimedOnce) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  int calls = 0;
  ScoreCache times([&](const GemmKey& k) {
    ++calls;
    return GemmTime{PredictGemm(gpu, k).time_s, 0, false};
  });
  int64_t generated = 0;
  const ModelSpec base = Pythia28(Attention::kUnfused);
  auto specs = GenerateCandidates(base, RecommendConstraints(), &generated);
  size_t total_gemms = 0;
  for (const ModelSpec& s : specs) {
    ScoreCandidate(s, gpu, times, CountParams(base).total_params);
    total_gemms += BuildGemms(s).size();
  }
  EXPECT_EQ(static_cast<size_t>(calls), times.distinct());
  EXPECT_LT(times.distinct(), total_gemms / 2);  // sharing across candidates is substantial
}

TEST(RecommendTest, ConstraintViolationsNameTheField) {
  RecommendConstraints c;
  c.param_tolerance = 0.9;
  c.allowed_head_dims = {4};
  c.min_heads = 10;
  c.max_heads = 5;
  c.max_candidates = 0;
  c.top = 0;
  c.keep_layers = true;
  c.vary = {Knob::kLayers};
  std::vector<std::string> fields;
  for (const auto& v : ValidateConstraints(c)) fields.push_back(v.field);
  EXPECT_THAT(fields,
              ::testing::UnorderedElementsAre("param_tolerance", "allowed_head_dims[0]",
                                              "max_heads", "max_candidates", "top", "keep_layers"));
}

}  // namespace
}  // namespace wavecrest
