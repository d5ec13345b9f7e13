#include "core/recommend.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/analysis.h"
#include "core/hf_import.h"
#include "core/memory.h"
#include "core/rules.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using testing::Pythia28;

std::vector<CandidateScore> RankPredicted(const ModelSpec& base, const RecommendConstraints& c,
                                          const GpuSpec& gpu) {
  int64_t generated = 0;
  std::vector<ModelSpec> specs = *GenerateCandidates(base, c, &generated);
  ScoreCache times([&](const GemmKey& k) {
    const GemmPrediction p = PredictGemm(gpu, k);
    return GemmTime{p.time_s, 0, false, p.band_p10, p.band_p90};
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

// The paper's advice for Pythia-2.8B (h = 2560, a = 32, h/a = 80), unfused attention, on the
// calibrated model: fewer, larger heads (a = 20, h/a = 128: rules 3 and 7) rank above a = 32 by
// more than the prediction's uncertainty, and a = 64 (h/a = 40) ranks below it.
//
// a = 40 (h/a = 64) is NOT asserted above a = 32 any more. The old model ranked it there only
// through a 0.6 penalty on 16-byte-aligned dimensions that no measurement supports (public H100
// data show none). Without it the physics favours fewer heads at this size: P·V has arithmetic
// intensity h/a FLOP/byte, below the A100's ridge (153), so it is bound by reading a·s² scores,
// and the score GEMM writes a·s² outputs; both grow with a. a = 40 must still rank below a = 20.
class PaperAdviceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PaperAdviceTest, FewerLargerHeadsRankAbove80AndMoreHeadsBelow) {
  const GpuSpec& gpu = **FindGpu(GetParam());
  RecommendConstraints c;
  c.vary = {Knob::kHeads, Knob::kHeadDim};  // a = 64 has head dim 40, below the 64 held
  c.tensor_parallel_options = {1, 2, 4};    // a = 20 is legal up to TP 4
  c.head_dim_multiple = 8;                  // and 40 is no multiple of 16
  const auto scores = RankPredicted(Pythia28(Attention::kUnfused), c, gpu);
  const int a32 = RankOf(scores, 2560, 32, 10240, 50304, 32);
  const int a40 = RankOf(scores, 2560, 40, 10240, 50304, 32);
  const int a20 = RankOf(scores, 2560, 20, 10240, 50304, 32);
  const int a64 = RankOf(scores, 2560, 64, 10240, 50304, 32);
  ASSERT_GE(a32, 0);
  ASSERT_GE(a40, 0);
  ASSERT_GE(a20, 0);
  ASSERT_GE(a64, 0);
  EXPECT_LT(a20, a32);
  EXPECT_LT(a20, a40);
  EXPECT_GT(a64, a32);
  EXPECT_TRUE(scores[a32].baseline);
  EXPECT_GT(scores[a20].speedup - scores[a20].speedup_uncertainty, 1.0);
  EXPECT_GT(scores[a20].speedup_uncertainty, 0.0);
  EXPECT_THAT(scores[a20].reasons,
              ::testing::Contains(::testing::HasSubstr("h/a 80 → 128 (rule 3: h/a divisible by "
                                                       "64; rule 7: fewer, larger heads)")));
  // The baseline's own rule violations are named for the candidates that keep them.
  EXPECT_THAT(scores[a64].reasons,
              ::testing::Contains(::testing::HasSubstr("still breaks rule 3")));
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
    auto specs = *GenerateCandidates(base, cs.c, &generated);
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
  const absl::StatusOr<std::vector<ModelSpec>> candidates =
      GenerateCandidates(s, RecommendConstraints(), &generated);
  ASSERT_TRUE(candidates.ok());
  for (const ModelSpec& c : *candidates) {
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
    const GemmPrediction p = PredictGemm(gpu, k);
    return GemmTime{p.time_s, 0, false, p.band_p10, p.band_p90};
  });
  int64_t generated = 0;
  const ModelSpec base = Pythia28(Attention::kUnfused);
  auto specs = *GenerateCandidates(base, RecommendConstraints(), &generated);
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

namespace wavecrest {
namespace {

ModelSpec Llama27b() {
  ModelSpec s;
  s.name = "llama-2-7b";
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 32;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 11008;
  s.vocab_size = 32000;
  s.norm = Norm::kRmsNorm;
  return *NormalizeSpec(s);
}

// The issue's case: ranked by step time, seven smaller candidates sat above Llama-2-7B with lower
// MFU. Ranked by efficiency, every candidate above the baseline is more efficient than it, by more
// than its uncertainty and 2% (Beats); every one below does not beat it.
TEST(RecommendTest, NoCandidateAboveTheBaselineIsLessEfficient) {
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    RecommendConstraints c;
    c.keep_layers = true;
    const auto scores = RankPredicted(Llama27b(), c, **FindGpu(gpu));
    ASSERT_GT(scores.size(), 10u);
    size_t base = 0;
    while (!scores[base].baseline) ++base;
    for (size_t i = 0; i < base; ++i) {
      EXPECT_GT(scores[i].mfu, scores[base].mfu) << gpu << " #" << i;
      EXPECT_TRUE(Beats(scores[i])) << gpu << " #" << i;
    }
    for (size_t i = base + 1; i < scores.size(); ++i) {
      EXPECT_FALSE(Beats(scores[i])) << gpu << " #" << i;
    }
  }
}

TEST(RecommendTest, NoShapeAppearsTwice) {
  const auto scores = RankPredicted(Llama27b(), RecommendConstraints(), **FindGpu("h100-sxm"));
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>> seen;
  for (const CandidateScore& s : scores) {
    const ModelSpec& m = s.spec;
    EXPECT_TRUE(seen.insert({m.hidden_size, m.num_attention_heads, m.num_kv_heads, m.head_dim,
                             m.ffn_hidden_size, m.vocab_size, m.num_layers})
                    .second);
  }
}

TEST(RecommendTest, EveryTensorParallelDegreeAskedAndThePipelineStagesStayLegal) {
  ModelSpec s = Llama27b();
  s.num_kv_heads = 8;
  s.pipeline_parallel = 4;
  s = *NormalizeSpec(s);
  RecommendConstraints c;
  // The KV group and the KV cache released: KV heads move freely (what is tested is sharding).
  c.vary = {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn,
            Knob::kLayers, Knob::kKvGroup, Knob::kKvCache};
  c.tensor_parallel_options = {2, 8};
  int64_t generated = 0;
  const absl::StatusOr<std::vector<ModelSpec>> specs = GenerateCandidates(s, c, &generated);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_GT(specs->size(), 20u);
  bool layers_moved = false;
  for (const ModelSpec& x : *specs) {
    for (int64_t t : {1, 2, 8}) {
      ModelSpec y = x;
      y.tensor_parallel = t;
      EXPECT_TRUE(NormalizeSpec(y).ok())
          << "t=" << t << " h=" << x.hidden_size << " a=" << x.num_attention_heads
          << " kv=" << x.num_kv_heads << " f=" << x.ffn_hidden_size;
    }
    EXPECT_EQ(x.num_layers % 4, 0);
    layers_moved |= x.num_layers != s.num_layers;
  }
  EXPECT_TRUE(layers_moved);
}

TEST(RecommendTest, ASearchSpaceTooLargeIsRefusedUpFrontAndAStopEndsTheSearch) {
  ModelSpec big;
  big.hidden_size = 65536;
  big.num_attention_heads = 512;
  big.num_layers = 32;
  big.vocab_size = 32000;
  big.mlp = Mlp::kSwiglu;
  big = *NormalizeSpec(big);
  RecommendConstraints c;
  c.param_tolerance = 0.5;
  c.vary = {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab};
  for (int64_t d = 8; d <= 1024; d += 8) c.allowed_head_dims.push_back(d);
  c.max_candidates = kMaxMaxCandidates;
  int64_t generated = 0;
  const auto refused = GenerateCandidates(big, c, &generated);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("vary"));
  EXPECT_EQ(generated, 0);

  int polls = 0;
  const auto stopped = GenerateCandidates(Llama27b(), RecommendConstraints(), &generated,
                                          [&] { return ++polls > 1; });
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kCancelled);
}

TEST(RecommendTest, CandidatesStayWithinMaxCandidatesWhileTheSearchRuns) {
  RecommendConstraints c;
  c.max_candidates = 7;
  int64_t generated = 0;
  const auto specs = GenerateCandidates(Llama27b(), c, &generated);
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(specs->size(), 7u);
  EXPECT_GT(generated, 7);
  EXPECT_EQ((*specs)[0], Llama27b());  // the baseline first
  // The rest by smallest parameter change.
  const int64_t p0 = CountParams(Llama27b()).total_params;
  for (size_t i = 2; i < specs->size(); ++i) {
    EXPECT_LE(std::abs(CountParams((*specs)[i - 1]).total_params - p0),
              std::abs(CountParams((*specs)[i]).total_params - p0));
  }
  // The nearest of the whole neighbourhood, though the search cut its list to the cap several
  // times on the way (at twice the cap).
  c.max_candidates = 100000;
  int64_t all_generated = 0;
  const auto all = GenerateCandidates(Llama27b(), c, &all_generated);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all_generated, generated);
  EXPECT_EQ(std::vector<ModelSpec>(all->begin(), all->begin() + 7), *specs);
  c.max_candidates = 4;
  const auto four = GenerateCandidates(Llama27b(), c, &generated);
  ASSERT_TRUE(four.ok());
  ASSERT_GT(all->size(), 4 * four->size());
  EXPECT_EQ(std::vector<ModelSpec>(all->begin(), all->begin() + 4), *four);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// A mixture of experts varies its expert granularity at equal ACTIVE parameters: finer experts
// (E·m, k·m, f/m) and coarser ones, each within the tolerance of the baseline's active count;
// a dense model never gets an experts knob's candidates.
TEST(RecommendTest, MoeExpertsVaryAtEqualActiveParameters) {
  ModelSpec base;
  base.hidden_size = 4096;
  base.num_attention_heads = 32;
  base.num_kv_heads = 8;
  base.num_layers = 8;
  base.vocab_size = 32000;
  base.mlp = Mlp::kSwiglu;
  base.ffn_hidden_size = 14336;
  base.norm = Norm::kRmsNorm;
  base.num_experts = 8;
  base.experts_per_token = 2;
  base = *NormalizeSpec(base);
  RecommendConstraints c;
  c.vary = {Knob::kExperts};
  int64_t generated = 0;
  const std::vector<ModelSpec> specs = *GenerateCandidates(base, c, &generated);
  const ParamCounts b = CountParams(base);
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  for (const ModelSpec& s : specs) {
    const ParamCounts p = CountParams(s);
    EXPECT_NEAR(static_cast<double>(p.active_params) / b.active_params, 1.0,
                c.param_tolerance + 1e-9)
        << s.num_experts << " " << s.experts_per_token << " " << s.ffn_hidden_size;
    EXPECT_EQ(s.hidden_size, base.hidden_size);  // only the experts moved
    shapes.insert({s.num_experts, s.experts_per_token, s.ffn_hidden_size});
  }
  EXPECT_TRUE(shapes.count({16, 4, 7168})) << "finer experts";
  EXPECT_TRUE(shapes.count({64, 16, 1792}));
  EXPECT_TRUE(shapes.count({4, 1, 28672})) << "coarser experts";
  EXPECT_EQ(*ParseKnob("experts"), Knob::kExperts);
  // The budget of an MoE is its active parameters.
  EXPECT_EQ(BudgetParams(base, b), b.active_params);
  ModelSpec dense = base;
  dense.num_experts = 0;
  dense.experts_per_token = 0;
  dense = *NormalizeSpec(dense);
  const std::vector<ModelSpec> dense_specs = *GenerateCandidates(dense, c, &generated);
  for (const ModelSpec& s : dense_specs) EXPECT_EQ(s.num_experts, 0);
}

// The models the issue tried, as a team would send them.
std::vector<std::pair<std::string, ModelSpec>> TeamModels() {
  ModelSpec llama3 = Llama27b();
  llama3.num_kv_heads = 8;
  llama3.ffn_hidden_size = 14336;
  llama3.vocab_size = 128256;
  ModelSpec mixtral = llama3;
  mixtral.vocab_size = 32000;
  mixtral.num_experts = 8;
  mixtral.experts_per_token = 2;
  return {{"llama-2-7b", Llama27b()},
          {"llama-3-8b", *NormalizeSpec(llama3)},
          {"pythia-2.8b", Pythia28(Attention::kFlash)},
          {"mixtral", *NormalizeSpec(mixtral)}};
}

// By default every candidate is one a tensor-parallel team can adopt: heads and KV heads divisible
// by 1, 2, 4 and 8, KV heads dividing heads, head dim a multiple of 16, and a mixture of experts'
// experts and top-k as given; reasons name the rules whole (never cut mid-word).
TEST(RecommendTest, DefaultCandidatesAreShapesATeamCanAdopt) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  for (const auto& [name, base] : TeamModels()) {
    const auto scores = RankPredicted(base, RecommendConstraints(), gpu);
    ASSERT_GT(scores.size(), 3u) << name;
    for (const CandidateScore& s : scores) {
      if (s.baseline) continue;
      const ModelSpec& m = s.spec;
      EXPECT_EQ(m.num_attention_heads % 8, 0) << name << " a=" << m.num_attention_heads;
      EXPECT_EQ(m.num_kv_heads % 8, 0) << name << " kv=" << m.num_kv_heads;
      EXPECT_EQ(m.num_attention_heads % m.num_kv_heads, 0) << name;
      EXPECT_EQ(m.head_dim % 16, 0) << name << " d=" << m.head_dim;
      EXPECT_EQ(m.num_experts, base.num_experts) << name;
      EXPECT_EQ(m.experts_per_token, base.experts_per_token) << name;
      std::vector<std::string> rules;
      for (const RuleViolation& v : CheckRules(m, BuildGemms(m))) rules.push_back(v.message);
      for (const std::string& r : s.reasons) {
        const std::string prefix = "still breaks rule ";
        if (r.rfind(prefix, 0) != 0) continue;
        const std::string message = r.substr(r.find(": ") + 2);
        EXPECT_THAT(rules, ::testing::Contains(message)) << name << ": " << r;
      }
    }
  }
}

// Each rule that refused something is counted and says what loosens it; loosening it brings the
// refused shapes back (Pythia-2.8B's 20 heads of 128 are refused for TP 8 and allowed up to TP 4).
TEST(RecommendTest, RefusalsAreCountedAndLooseningARuleBringsItsShapesBack) {
  const ModelSpec base = Pythia28(Attention::kFlash);
  RecommendConstraints c;
  c.vary = {Knob::kHeads};
  int64_t generated = 0;
  std::vector<Refusal> refusals;
  auto specs = *GenerateCandidates(base, c, &generated, nullptr, &refusals);
  auto has_heads = [](const std::vector<ModelSpec>& v, int64_t a) {
    return std::any_of(v.begin(), v.end(),
                       [&](const ModelSpec& s) { return s.num_attention_heads == a; });
  };
  EXPECT_FALSE(has_heads(specs, 20));
  auto rule = [&](absl::string_view name) -> const Refusal* {
    for (const Refusal& r : refusals) {
      if (r.rule == name) return &r;
    }
    return nullptr;
  };
  ASSERT_NE(rule("heads_divisible_by_tp"), nullptr);
  EXPECT_GT(rule("heads_divisible_by_tp")->count, 0);
  EXPECT_THAT(rule("heads_divisible_by_tp")->loosen, ::testing::HasSubstr("--tp-options"));
  EXPECT_THAT(rule("heads_divisible_by_tp")->what, ::testing::HasSubstr("1, 2, 4, 8"));
  ASSERT_NE(rule("head_dim_multiple"), nullptr);  // h/a = 2560/40... e.g. 40 (a = 64) is refused
  c.tensor_parallel_options = {1, 2, 4};
  specs = *GenerateCandidates(base, c, &generated, nullptr, &refusals);
  EXPECT_TRUE(has_heads(specs, 20));
  // Head dim 40 (a = 64) needs head_dim_multiple 8, and is below the head dim of 64 a candidate
  // holds unless vary releases it.
  EXPECT_FALSE(has_heads(specs, 64));
  c.head_dim_multiple = 8;
  specs = *GenerateCandidates(base, c, &generated, nullptr, &refusals);
  EXPECT_FALSE(has_heads(specs, 64));
  ASSERT_NE(rule("head_dim_floor"), nullptr);
  EXPECT_THAT(rule("head_dim_floor")->loosen, ::testing::HasSubstr("--vary head_dim"));
  c.vary.insert(Knob::kHeadDim);
  specs = *GenerateCandidates(base, c, &generated, nullptr, &refusals);
  EXPECT_TRUE(has_heads(specs, 64));
  // KV heads: fewer than a TP degree they divide are replicated (as Megatron does) by default;
  // kv_divisible asks for every degree to divide them, and then TP 8 is not a degree the
  // baseline's 4 KV heads meet, so it is not required unless named.
  ModelSpec gqa = Llama27b();
  gqa.num_kv_heads = 4;
  gqa = *NormalizeSpec(gqa);
  RecommendConstraints kv;
  kv.vary = {Knob::kKvHeads, Knob::kKvGroup, Knob::kKvCache};  // the group and cache released
  kv.param_tolerance = 0.1;  // 4 -> 8 KV heads adds 2% to Llama-2-7B
  specs = *GenerateCandidates(gqa, kv, &generated, nullptr, &refusals);
  EXPECT_THAT(TpDegrees(gqa, kv), ::testing::ElementsAre(1, 2, 4, 8));
  EXPECT_TRUE(std::any_of(specs.begin() + 1, specs.end(),
                          [](const ModelSpec& s) { return s.num_kv_heads < 8; }));
  kv.kv_divisible = true;
  EXPECT_THAT(TpDegrees(gqa, kv), ::testing::ElementsAre(1, 2, 4));
  kv.tensor_parallel_options = {8};
  const TpRequirement named = RequiredTp(gqa, kv);
  EXPECT_THAT(named.degrees, ::testing::ElementsAre(1, 8));
  ASSERT_EQ(named.baseline_breaks.size(), 1u);  // said, not hidden
  EXPECT_THAT(named.baseline_breaks[0], ::testing::HasSubstr("4 KV heads"));
  specs = *GenerateCandidates(gqa, kv, &generated, nullptr, &refusals);
  ASSERT_GT(specs.size(), 1u);
  for (size_t i = 1; i < specs.size(); ++i) {
    // Named degrees are met by every candidate, the baseline's 4 KV heads moved to a legal count.
    EXPECT_EQ(specs[i].num_kv_heads % 8, 0) << specs[i].num_kv_heads;
    EXPECT_THAT(LegalTp(specs[i], named.degrees, kv.kv_divisible), ::testing::ElementsAre(1, 8));
  }
  EXPECT_THAT(LegalTp(gqa, named.degrees, kv.kv_divisible), ::testing::ElementsAre(1));
  // An MoE keeps its experts by default; vary experts asks for them.
  const ModelSpec mixtral = TeamModels()[3].second;
  specs = *GenerateCandidates(mixtral, RecommendConstraints(), &generated);
  for (const ModelSpec& s : specs) EXPECT_EQ(s.experts_per_token, 2);
}

// One rule in every mode: those that beat the baseline (beyond their uncertainty and 2%), the
// baseline, then the rest; with nothing beating it the baseline is first.
TEST(RecommendTest, TheBaselineFollowsThoseThatBeatItAndLeadsWhenNoneDoes) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  ScoreCache times([&](const GemmKey& k) { return GemmTime{PredictGemmTime(gpu, k), 0, true}; });
  const ModelSpec base = Llama27b();
  const int64_t p = CountParams(base).total_params;
  auto with_ffn = [&](int64_t f, double mfu) {
    ModelSpec s = base;
    s.ffn_hidden_size = f;
    CandidateScore c = ScoreCandidate(*NormalizeSpec(s), gpu, times, p);
    c.mfu = mfu;
    return c;
  };
  std::vector<CandidateScore> scores = {with_ffn(11008, 0.50), with_ffn(11264, 0.505),
                                        with_ffn(10752, 0.49), with_ffn(11136, 0.53)};
  scores[0].baseline = true;
  RankCandidates(scores);
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0].spec.ffn_hidden_size, 11136);  // 1.06x: beats
  EXPECT_TRUE(scores[1].baseline);
  EXPECT_EQ(scores[2].spec.ffn_hidden_size, 11264);  // 1.01x: not worth a change
  EXPECT_EQ(scores[3].spec.ffn_hidden_size, 10752);

  std::vector<CandidateScore> none = {with_ffn(11008, 0.50), with_ffn(11264, 0.505),
                                      with_ffn(10752, 0.49)};
  none[0].baseline = true;
  RankCandidates(none);
  EXPECT_TRUE(none[0].baseline);
  EXPECT_GT(none[1].speedup, 1.0);
  EXPECT_FALSE(Beats(none[1]));
}

// Among winners the model cannot tell apart, the smaller change goes first and says why: fewer
// fields, then a head dim moved to one attention kernels are tuned for (64, 128) before one that
// is not, then the nearer value; a faster winner beyond the uncertainty stays first.
TEST(RecommendTest, TheSmallerChangeLeadsWinnersWithinTheUncertainty) {
  auto candidate = [](int64_t head_dim, int64_t ffn, double mfu, uint64_t id) {
    ModelSpec s = Llama27b();
    s.head_dim = head_dim;
    s.num_attention_heads = 4096 / head_dim;
    s.num_kv_heads = 0;
    s.ffn_hidden_size = ffn;
    CandidateScore c;
    c.spec = *NormalizeSpec(s);
    c.mfu = mfu;
    c.step_time_s = 1;
    c.contributions = {{id, 1.0, 0.05}};  // nothing shared: sigma of the ratio ~0.07
    return c;
  };
  std::vector<CandidateScore> close = {
      candidate(128, 11008, 0.50, 1), candidate(256, 11008, 0.60, 2),
      candidate(64, 11008, 0.58, 3), candidate(64, 11264, 0.59, 4), candidate(128, 11264, 0.57, 5)};
  close[0].baseline = true;
  RankCandidates(close);
  ASSERT_EQ(close.size(), 5u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Beats(close[i])) << i;
  // One field each: the MLP width (nearest), the head dim tuned (64), the head dim untuned (256);
  // then the two-field change, the fastest-looking of all, last.
  EXPECT_EQ(close[0].spec.ffn_hidden_size, 11264);
  EXPECT_EQ(close[0].spec.head_dim, 128);
  EXPECT_EQ(close[1].spec.head_dim, 64);
  EXPECT_EQ(close[1].spec.ffn_hidden_size, 11008);
  EXPECT_EQ(close[2].spec.head_dim, 256);
  EXPECT_EQ(close[3].spec.head_dim, 64);
  EXPECT_EQ(close[3].spec.ffn_hidden_size, 11264);
  EXPECT_THAT(close[0].reasons.back(), ::testing::HasSubstr("the smaller change comes first"));
  EXPECT_THAT(close[0].reasons.back(), ::testing::HasSubstr("(1.200x"));

  std::vector<CandidateScore> apart = {candidate(128, 11008, 0.50, 1),
                                       candidate(64, 11264, 0.75, 2),
                                       candidate(128, 11264, 0.60, 3)};
  apart[0].baseline = true;
  RankCandidates(apart);
  EXPECT_EQ(apart[0].spec.head_dim, 64);  // 1.5x: the 1.2x one is beyond its uncertainty
  EXPECT_TRUE(apart[0].ranked_note.empty());
  EXPECT_TRUE(apart[1].ranked_note.empty());
}

// Decode: the bytes a step reads are the weights once and the KV cache; a mixture of experts
// reads the experts its tokens route to.
TEST(RecommendTest, DecodeReadsTheWeightsOnceAndTheKvCache) {
  ModelSpec s = Llama27b();
  s.workload = Workload::kDecode;
  s.micro_batch_size = 1;
  s.kv_cache_length = 1024;
  s = *NormalizeSpec(s);
  const ParamCounts pc = CountParams(s);
  const double weights = 2.0 * (pc.total_params - 32000 * 4096);  // untied: input rows not read
  const double kv = 2.0 * 32 * 1 * 1024 * 4096 * 2;
  EXPECT_NEAR(DecodeBytesPerStep(s), weights + kv, 1);
  s.tensor_parallel = 2;
  EXPECT_NEAR(DecodeBytesPerStep(*NormalizeSpec(s)), (weights + kv) / 2, 1);

  ModelSpec moe = TeamModels()[3].second;  // 8 experts, top-2, 8 KV heads of 128
  moe.workload = Workload::kDecode;
  moe.kv_cache_length = 1024;
  auto weights_read = [&](int64_t b) {
    moe.micro_batch_size = b;
    const ModelSpec n = *NormalizeSpec(moe);
    const double cache = 2.0 * 32 * static_cast<double>(b) * 1024 * (8 * 128) * 2;
    return DecodeBytesPerStep(n) - cache;
  };
  const ParamCounts mp = CountParams(*NormalizeSpec(moe));
  const double all = 2.0 * (mp.total_params - 32000 * 4096);
  const double experts = 2.0 * (mp.total_params - mp.active_params) * 8 / 6;
  // One token reads 2 of the 8 experts of each layer; 256 tokens read (nearly) all of them.
  EXPECT_NEAR(weights_read(1), all - experts * 6 / 8, 1e3);
  EXPECT_NEAR(weights_read(256), all, 1e-6 * all);
  ModelSpec train = Llama27b();
  EXPECT_EQ(DecodeBytesPerStep(train), 0);
}

// Predictions left beside measurements take the measured/predicted ratio of their class nearest in
// predicted time: small GEMMs the large ones' ratio only where nothing nearer was measured.
TEST(MeasuredScaleTest, NearestMeasuredOfTheSameClassSetTheFactor) {
  const GemmKey aligned{{4096, 4096, 4096, 1}, Layout::kTN, DType::kBf16};
  const GemmKey misaligned{{4096, 4097, 4096, 1}, Layout::kTN, DType::kBf16};
  const GemmKey fp8{{4096, 4096, 4096, 1}, Layout::kTN, DType::kFp8E4M3};
  MeasuredScale s;
  EXPECT_DOUBLE_EQ(s.Factor(aligned, 1e-3), 1);  // nothing measured
  EXPECT_DOUBLE_EQ(s.MedianRatio(), 1);
  // Large aligned GEMMs ran at 0.9 of the prediction, small ones at 0.4 (the host-bound sweep).
  for (double t : {1e-3, 2e-3, 4e-3, 8e-3, 16e-3}) s.Add(aligned, t, 0.9 * t);
  for (double t : {5e-6, 6e-6, 7e-6}) s.Add(aligned, t, 0.4 * t);
  s.Add(misaligned, 1e-3, 1.5e-3);  // one sample: too few for its class
  s.Add(aligned, 0, 1);             // not a time: ignored
  EXPECT_EQ(s.samples(), 9u);
  EXPECT_NEAR(s.Factor(aligned, 3e-3), 0.9, 1e-12);
  EXPECT_NEAR(s.Factor(aligned, 6e-6), 0.4, 1e-12);  // its 5 nearest: 3 small, 2 large
  EXPECT_DOUBLE_EQ(s.Factor(misaligned, 1e-3), 1);
  EXPECT_DOUBLE_EQ(s.Factor(fp8, 1e-3), 1);  // another dtype
  EXPECT_NEAR(s.MedianRatio(), 0.9, 1e-12);
}

// Measurements arrive in any order (a hash map's, a worker's): the factor does not depend on it,
// even when several measured GEMMs are equally near.
TEST(MeasuredScaleTest, TheFactorDoesNotDependOnTheOrderOfTheMeasurements) {
  const GemmKey key{{4096, 4096, 4096, 1}, Layout::kTN, DType::kBf16};
  // Equally near 1e-3 in log time: 0.5e-3 and 2e-3, three times each, with different ratios.
  const std::vector<std::pair<double, double>> samples = {
      {0.5e-3, 0.7}, {2e-3, 0.8}, {0.5e-3, 0.9}, {2e-3, 1.0}, {0.5e-3, 1.1}, {2e-3, 1.2}};
  std::vector<size_t> order = {0, 1, 2, 3, 4, 5};
  std::set<double> factors;
  do {
    MeasuredScale s;
    for (size_t i : order) s.Add(key, samples[i].first, samples[i].first * samples[i].second);
    factors.insert(s.Factor(key, 1e-3));
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(factors.size(), 1u);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// The examples' Hugging Face configs, imported as a new user brings them.
std::vector<std::pair<std::string, ModelSpec>> HfExampleSpecs() {
  std::vector<std::pair<std::string, ModelSpec>> out;
  const std::string dir = std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream f(e.path());
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    absl::StatusOr<ModelSpec> s = ImportHfConfig(text);
    if (!s.ok()) continue;  // a family another change reads
    out.emplace_back(e.path().filename().string(), *NormalizeSpec(*s));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// The example as trained (its config's own sequence) and as served: 16 sequences at 32k.
std::vector<ModelSpec> Workloads(const ModelSpec& s) {
  ModelSpec decode = s;
  decode.workload = Workload::kDecode;
  decode.micro_batch_size = 16;
  decode.kv_cache_length = 32768;
  return {s, *NormalizeSpec(decode)};
}

double KvChange(const ModelSpec& base, const ModelSpec& c) {
  return KvCacheBytesPerToken(c) / KvCacheBytesPerToken(base) - 1;
}

// The same model, reshaped: over every example config, trained and served, with the default
// knobs and with every shape knob, no candidate changes the KV group, moves the KV-cache bytes
// per token by more than 3%, cuts the head dim below 64 (or the baseline's), moves a mixture's
// total parameters by more than 3% or its experts and top-k, or breaks the layer pattern.
TEST(RecommendTest, EveryCandidateIsTheSameModelUnlessVaryReleasesIt) {
  const auto examples = HfExampleSpecs();
  ASSERT_GE(examples.size(), 20u);
  int checked = 0;
  for (const auto& [file, spec] : examples) {
    for (const ModelSpec& base : Workloads(spec)) {
      for (bool wide : {false, true}) {
        RecommendConstraints c;
        if (wide) c.vary = {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn, Knob::kLayers};
        int64_t generated = 0;
        const auto specs = GenerateCandidates(base, c, &generated);
        ASSERT_TRUE(specs.ok()) << file << ": " << specs.status();
        const int64_t floor = std::min<int64_t>(64, base.head_dim);
        const ParamCounts bp = CountParams(base);
        for (const ModelSpec& x : *specs) {
          const std::string at = absl::StrCat(file, " ", WorkloadName(base.workload),
                                              wide ? " wide" : "", ": a ", x.num_attention_heads,
                                              " kv ", x.num_kv_heads, " d ", x.head_dim, " L ",
                                              x.num_layers);
          ++checked;
          EXPECT_EQ(x.num_attention_heads * base.num_kv_heads,
                    base.num_attention_heads * x.num_kv_heads)
              << at;
          EXPECT_LE(std::abs(KvChange(base, x)), 0.03 + 1e-9) << at;
          EXPECT_TRUE(x.head_dim == base.head_dim || x.head_dim >= floor) << at;
          EXPECT_EQ(x.num_experts, base.num_experts) << at;
          EXPECT_EQ(x.experts_per_token, base.experts_per_token) << at;
          if (base.num_experts > 0) {
            const double total = static_cast<double>(CountParams(x).total_params) /
                                 static_cast<double>(bp.total_params);
            EXPECT_NEAR(total, 1, 0.03 + 1e-9) << at;
          }
          // The layer pattern: the local/global share and the dense/MoE layout at this L.
          const ModelSpec pattern = WithLayers(base, x.num_layers);
          EXPECT_EQ(x.sliding_window_layers, pattern.sliding_window_layers) << at;
          EXPECT_EQ(x.first_dense_layers, pattern.first_dense_layers) << at;
          EXPECT_EQ(x.moe_layer_interval, base.moe_layer_interval) << at;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Each held property is released by naming it, and only then do candidates change it: Qwen2-7B's
// group of 7 moves with kv_group; Falcon-7B's head dim 64 halves with head_dim; a KV cache that
// grows with a wider model's layers comes back with kv_cache. The answer says what was held.
TEST(RecommendTest, NamingAHeldPropertyInVaryReleasesIt) {
  std::map<std::string, ModelSpec> by_file;
  for (const auto& [file, spec] : HfExampleSpecs()) by_file[file] = spec;
  ASSERT_TRUE(by_file.count("qwen2-7b.json") && by_file.count("falcon-7b.json"));
  auto any = [](const ModelSpec& base, const RecommendConstraints& c,
                const std::function<bool(const ModelSpec&)>& pred) {
    int64_t generated = 0;
    const auto specs = *GenerateCandidates(base, c, &generated);
    return std::any_of(specs.begin() + 1, specs.end(), pred);
  };
  const ModelSpec qwen = by_file["qwen2-7b.json"];
  auto group_moves = [&](const ModelSpec& x) {
    return x.num_attention_heads * qwen.num_kv_heads != qwen.num_attention_heads * x.num_kv_heads;
  };
  RecommendConstraints c;
  c.vary = {Knob::kHeads, Knob::kKvHeads};
  c.param_tolerance = 0.05;
  EXPECT_FALSE(any(qwen, c, group_moves));
  c.vary.insert(Knob::kKvGroup);
  c.vary.insert(Knob::kKvCache);
  EXPECT_TRUE(any(qwen, c, group_moves));
  // Releases are not shape knobs: named alone, the default knobs move.
  RecommendConstraints alone;
  alone.vary = {Knob::kKvGroup};
  EXPECT_EQ(EffectiveKnobs(alone), EffectiveKnobs(RecommendConstraints()));

  const ModelSpec falcon = by_file["falcon-7b.json"];
  RecommendConstraints heads;
  heads.vary = {Knob::kHeads};
  heads.tensor_parallel_options = {1};
  heads.head_dim_multiple = 1;
  auto below = [&](const ModelSpec& x) { return x.head_dim < 64; };
  EXPECT_FALSE(any(falcon, heads, below));
  heads.vary.insert(Knob::kHeadDim);
  EXPECT_TRUE(any(falcon, heads, below));

  const ModelSpec llama = Llama27b();
  RecommendConstraints wide;  // hidden ±5% with the layers re-solved: the cache follows L·h
  auto cache_moves = [&](const ModelSpec& x) { return std::abs(KvChange(llama, x)) > 0.03; };
  EXPECT_FALSE(any(llama, wide, cache_moves));
  wide.vary = {Knob::kHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab, Knob::kLayers,
               Knob::kKvCache};
  EXPECT_TRUE(any(llama, wide, cache_moves));

  const std::vector<HeldProperty> held = HeldProperties(qwen, c);
  auto find = [&](const std::string& name) -> const HeldProperty* {
    for (const HeldProperty& h : held) {
      if (h.name == name) return &h;
    }
    return nullptr;
  };
  ASSERT_NE(find("kv_group"), nullptr);
  EXPECT_TRUE(find("kv_group")->released);
  EXPECT_THAT(find("kv_group")->what, ::testing::HasSubstr("7 query heads per KV head"));
  ASSERT_NE(find("head_dim"), nullptr);
  EXPECT_FALSE(find("head_dim")->released);
  EXPECT_EQ(find("experts"), nullptr);  // dense
  EXPECT_EQ(*ParseKnob("kv-group"), Knob::kKvGroup);
  EXPECT_EQ(*ParseKnob("total_params"), Knob::kTotalParams);
}

// A model whose head dim is its own (Gemma's 256 at h 3072, GPT-OSS's 64 heads of 64 at h 2880,
// Qwen3-MoE's 32 of 128 at h 2048): with vary heads the heads trade against the head dim over
// the attention width, which stays as it is, instead of nothing to compare.
TEST(RecommendTest, HeadsVaryForAnExplicitHeadDim) {
  int models = 0;
  for (const auto& [file, base] : HfExampleSpecs()) {
    // Multi-head latent attention's head dim is its nope and rotary parts: not traded here.
    if (base.num_attention_heads * base.head_dim == base.hidden_size || base.kv_lora_rank > 0) {
      continue;
    }
    ++models;
    RecommendConstraints c;
    c.vary = {Knob::kHeads};
    c.tensor_parallel_options = {1};
    int64_t generated = 0;
    std::vector<Refusal> refusals;
    const auto specs = *GenerateCandidates(base, c, &generated, nullptr, &refusals);
    EXPECT_GT(specs.size(), 1u) << file;
    for (const ModelSpec& x : specs) {
      EXPECT_EQ(x.num_attention_heads * x.head_dim, base.num_attention_heads * base.head_dim)
          << file;
      EXPECT_EQ(x.hidden_size, base.hidden_size) << file;
    }
  }
  EXPECT_GE(models, 4);
}

}  // namespace
}  // namespace wavecrest
