// A mixture of experts priced by its routing (core/derived_shape.cc DeriveExperts, core/gemm.cc):
// prefill and decode run only the experts their tokens reach, each on the rows routed to it;
// training runs every expert on its balanced share, padded to a capacity or, dropless, skewed
// over expert-parallel ranks; FLOPs, the weights the GEMMs read and the decode bytes agree.
#include <cmath>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/memory.h"
#include "core/model_spec.h"
#include "core/model_stats.h"
#include "tests/core/test_specs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

bool IsExpert(const Gemm& g) {
  return g.name == kMoeGateUp || g.name == kMoeUp || g.name == kMoeDown;
}

// Qwen3-30B-A3B's shape: 128 experts of 768, top 8, 48 layers.
ModelSpec Qwen3Moe(Workload workload, int64_t batch) {
  ModelSpec s = testing::LlamaLike(2048, 32, 4, 48, 768, 151936);
  s.head_dim = 128;
  s.num_experts = 128;
  s.experts_per_token = 8;
  s.workload = workload;
  s.micro_batch_size = batch;
  s.kv_cache_length = 128;
  return *NormalizeSpec(s);
}

// The expected experts a batch touches under uniform routing, E·(1 − (1 − k/E)^T), rounded.
int64_t Touched(double experts, double k, double tokens) {
  return std::llround(experts * (1 - std::pow(1 - k / experts, tokens)));
}

TEST(ExpertRoutingTest, DecodeRunsOnlyTheExpertsItsTokensReach) {
  for (int64_t b : {1, 4, 16, 64, 256}) {
    const ModelSpec s = Qwen3Moe(Workload::kDecode, b);
    const DerivedShape d = Derive(s);
    const int64_t touched = std::min<int64_t>(128, std::max<int64_t>(1, Touched(128, 8, b)));
    EXPECT_EQ(d.experts_run, touched) << "b " << b;
    EXPECT_EQ(d.expert_rows_total, b * 8) << "b " << b;  // every routed copy, none padded
    // The forward expert GEMMs: `touched` experts in all, rows summing to the routed copies.
    int64_t experts = 0, rows = 0;
    for (const Gemm& g : BuildGemms(s)) {
      if (g.name != kMoeGateUp) continue;
      experts += g.shape.batch;
      rows += g.shape.batch * g.shape.m;
      EXPECT_EQ(g.count, 48);
    }
    EXPECT_EQ(experts, touched) << "b " << b;
    EXPECT_EQ(rows, b * 8) << "b " << b;
  }
  // One token of Mixtral's top 2 of 8 touches 2 experts, one row each.
  ModelSpec mixtral = testing::LlamaLike(4096, 32, 8, 32, 14336, 32000);
  mixtral.num_experts = 8;
  mixtral.experts_per_token = 2;
  mixtral.workload = Workload::kDecode;
  const DerivedShape d = Derive(*NormalizeSpec(mixtral));
  EXPECT_EQ(d.experts_run, 2);
  EXPECT_EQ(d.expert_tokens, 1);
}

TEST(ExpertRoutingTest, DecodeFlopsAreTwiceTheParametersATokenMultiplies) {
  const ModelSpec s = Qwen3Moe(Workload::kDecode, 1);
  const ParamCounts p = CountParams(s);
  const FlopCounts f = CountFlops(s, BuildGemms(s));
  // Active parameters less the input embedding (a lookup), the norms (no GEMM) aside; plus the
  // attention over the 128 cached tokens (4·kv·a·d per layer).
  const double multiplied = static_cast<double>(p.active_params) - 151936.0 * 2048;
  const double attention = 4.0 * 128 * 32 * 128 * 48;
  EXPECT_NEAR(f.model_flops / (2 * multiplied + attention), 1.0, 0.005) << f.model_flops;
  // All 128 experts on one row each, as before, would be 9× the active FLOPs.
  EXPECT_LT(f.model_flops, 1.1 * 2 * static_cast<double>(p.active_params));
}

// What decode reads (MBU's numerator) is what its GEMMs read: every GEMM's weight matrix once
// (the experts the batch touches), the KV cache; both move together with the batch.
TEST(ExpertRoutingTest, DecodeBytesAreTheWeightsItsGemmsRead) {
  for (int64_t b : {1, 16, 256}) {
    const ModelSpec s = Qwen3Moe(Workload::kDecode, b);
    double weights = 0;
    for (const Gemm& g : BuildGemms(s)) {
      if (g.name == kAttnFused || g.name == kAttnScore || g.name == kAttnOverValue) continue;
      weights += static_cast<double>(g.shape.n) * static_cast<double>(g.shape.k) *
                 static_cast<double>(g.shape.batch) * static_cast<double>(g.count) * 2;
    }
    const double read = DecodeBytesPerStep(s) - KvCacheBytes(s);
    // The norms' weights (no GEMM) are the difference.
    EXPECT_NEAR(read / weights, 1.0, 0.001) << "b " << b;
  }
}

TEST(ExpertRoutingTest, DecodeTimeIsBoundByTheWeightsOfTheTouchedExperts) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  auto expert_time = [&](int64_t b) {
    double t = 0;
    const ModelSpec s = Qwen3Moe(Workload::kDecode, b);
    for (const Gemm& g : BuildGemms(s)) {
      if (IsExpert(g)) t += Predict(gpu, g).time_s * static_cast<double>(g.count);
    }
    return t;
  };
  // One token reads 8 of 128 experts, 64 tokens nearly all of them: about 128/8 × the bytes.
  const double one = expert_time(1), many = expert_time(64);
  const double ratio = static_cast<double>(Touched(128, 8, 64)) / 8;
  EXPECT_GT(many / one, 0.6 * ratio) << one << " " << many;
  EXPECT_LT(many / one, 1.6 * ratio) << one << " " << many;
}

TEST(ExpertRoutingTest, PrefillRoutesItsTokensToEveryExpert) {
  ModelSpec s = Qwen3Moe(Workload::kPrefill, 1);
  s.seq_length = 4096;
  s = *NormalizeSpec(s);
  const DerivedShape d = Derive(s);
  EXPECT_EQ(d.experts_run, 128);
  EXPECT_EQ(d.expert_rows_total, 4096 * 8);
  EXPECT_EQ(d.expert_tokens, 256);
}

TEST(ExpertRoutingTest, TrainingSkewPricesTheBusiestExpertParallelRank) {
  ModelSpec s = Qwen3Moe(Workload::kTraining, 1);
  s.seq_length = 4096;
  s.expert_parallel = 8;
  const ModelSpec balanced = *NormalizeSpec(s);
  s.moe_routing_skew = 1.5;
  const ModelSpec skewed = *NormalizeSpec(s);
  const DerivedShape b = Derive(balanced), k = Derive(skewed);
  EXPECT_EQ(b.expert_tokens, 4096 * 8 * 8 / 128);  // T·k·e/E
  EXPECT_EQ(k.expert_tokens, 4096 * 8 * 8 / 128 * 3 / 2);
  EXPECT_DOUBLE_EQ(k.expert_padding, 1.5);
  // The model's FLOPs are the same; the busiest rank's step does half again the expert work.
  const FlopCounts fb = CountFlops(balanced, BuildGemms(balanced));
  const FlopCounts fk = CountFlops(skewed, BuildGemms(skewed));
  EXPECT_NEAR(fk.model_flops / fb.model_flops, 1.0, 1e-9);
  EXPECT_GT(fk.step_flops, fb.step_flops);
  EXPECT_THAT(ExpertRoutingAssumption(skewed), ::testing::HasSubstr("1.5 times the mean"));
  EXPECT_THAT(ExpertRoutingAssumption(balanced), ::testing::HasSubstr("balanced"));
  // One expert-parallel rank runs every copy itself: a skew changes nothing there.
  s.expert_parallel = 1;
  EXPECT_EQ(Derive(*NormalizeSpec(s)).expert_tokens, 4096 * 8 / 128);
}

TEST(ExpertRoutingTest, SkewErrorsNameTheField) {
  ModelSpec s = Qwen3Moe(Workload::kTraining, 1);
  s.moe_routing_skew = 0.5;
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()),
              ::testing::HasSubstr("moe_routing_skew: must be 0 (balanced) or in [1, 16]"));
  s.moe_routing_skew = 2;
  s.moe_capacity_factor = 1.25;
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()),
              ::testing::HasSubstr("moe_routing_skew: skews dropless routing"));
  ModelSpec dense = testing::LlamaLike(2048, 32, 4, 4, 768, 1000);
  dense.moe_routing_skew = 2;
  EXPECT_THAT(std::string(NormalizeSpec(dense).status().message()),
              ::testing::HasSubstr("needs num_experts > 0"));
}

TEST(ExpertRoutingTest, TheAssumptionSaysWhatDecodeTouches) {
  const std::string a = ExpertRoutingAssumption(Qwen3Moe(Workload::kDecode, 1));
  EXPECT_THAT(a, ::testing::HasSubstr("touch 8 of 128 experts"));
  EXPECT_EQ(ExpertRoutingAssumption(*NormalizeSpec(testing::LlamaLike(64, 1, 1, 1, 64, 8))), "");
}

}  // namespace
}  // namespace wavecrest
