// The model's FLOPs under the two attention conventions (core/model_stats.h FlopCount).
#include "core/model_stats.h"

#include <string>

#include "absl/strings/match.h"
#include "core/analysis.h"
#include "core/parallelism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

// A GPT of Megatron's closed form: multi-head attention, a 4h GELU MLP, no biases, no learned
// positions, untied output matrix, fused attention.
ModelSpec Gpt(int64_t seq, Workload workload = Workload::kTraining) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 8;
  s.vocab_size = 32768;
  s.seq_length = seq;
  s.micro_batch_size = 2;
  s.mlp = Mlp::kGelu;
  s.bias = Bias::kNone;
  s.tied_embeddings = false;
  s.workload = workload;
  s.kv_cache_length = seq;
  return *NormalizeSpec(s);
}

FlopCounts Count(const ModelSpec& s) { return CountFlops(s, BuildGemms(s)); }

// Narayanan et al. 2021 / Korthikanti et al. 2022: 72·b·s·L·h²(1 + s/6h) + 6·b·s·h·V for the
// whole product; a causal mask halves the s/6h term (Megatron-LM's training.py today).
TEST(ModelStatsTest, AttentionCountedWholeOrCausalHalfAsMegatronCountsIt) {
  for (int64_t seq : {2048, 32768}) {
    const ModelSpec s = Gpt(seq);
    const double b = 2, L = 8, h = 4096, v = 32768, sq = static_cast<double>(seq);
    const double full = 72 * b * sq * L * h * h * (1 + sq / (6 * h)) + 6 * b * sq * h * v;
    const double causal = 72 * b * sq * L * h * h * (1 + sq / (12 * h)) + 6 * b * sq * h * v;
    const FlopCounts c = Count(s);
    EXPECT_NEAR(c.model_flops, full, 1e-9 * full) << seq;
    EXPECT_NEAR(c.causal_model_flops, causal, 1e-9 * causal) << seq;
    EXPECT_DOUBLE_EQ(c.ModelFlops(FlopCount::kFull), c.model_flops);
    EXPECT_DOUBLE_EQ(c.ModelFlops(FlopCount::kCausal), c.causal_model_flops);
    // The kernels' own work counts FlashAttention backward's recomputed scores (more than the
    // causal half) but not the blocks the mask skips (less than the whole product).
    EXPECT_GT(c.step_flops, c.causal_model_flops) << seq;
    EXPECT_LT(c.step_flops, c.model_flops) << seq;
  }
}

// Unfused attention runs the products as GEMMs (no recomputation): the full count is their sum,
// and the causal one halves them alike.
TEST(ModelStatsTest, UnfusedAttentionCountsTheSame) {
  ModelSpec s = Gpt(4096);
  ModelSpec unfused = s;
  unfused.attention = Attention::kUnfused;
  const FlopCounts fused = Count(s), plain = Count(*NormalizeSpec(unfused));
  EXPECT_NEAR(plain.model_flops, fused.model_flops, 1e-9 * fused.model_flops);
  EXPECT_NEAR(plain.causal_model_flops, fused.causal_model_flops, 1e-9 * fused.model_flops);
  EXPECT_DOUBLE_EQ(plain.step_flops, plain.model_flops);
}

// Decode's one query row against the cache has no mask to halve; prefill's prompt has.
TEST(ModelStatsTest, DecodeHasNoCausalHalf) {
  const FlopCounts decode = Count(Gpt(8192, Workload::kDecode));
  EXPECT_DOUBLE_EQ(decode.causal_model_flops, decode.model_flops);
  const FlopCounts prefill = Count(Gpt(8192, Workload::kPrefill));
  EXPECT_LT(prefill.causal_model_flops, prefill.model_flops);
}

// The step's MFU and TFLOP/s follow the run's count; its time does not; the assumptions say
// which count was used.
TEST(ModelStatsTest, TheStepReportsMfuInTheCountAsked) {
  ModelSpec s = Gpt(32768);
  s.context_parallel = 4;
  const Analysis a = *Analyze(*NormalizeSpec(s), **FindGpu("h100-sxm"));
  RunConfig run;
  run.num_gpus = 8;
  const StepBreakdown full = *PlanStep(a, run);
  run.flop_count = FlopCount::kCausal;
  const StepBreakdown causal = *PlanStep(a, run);
  EXPECT_DOUBLE_EQ(causal.step_s, full.step_s);
  EXPECT_EQ(causal.flop_count, FlopCount::kCausal);
  EXPECT_NEAR(causal.mfu / full.mfu, a.flops.causal_model_flops / a.flops.model_flops, 1e-12);
  // Each reports the other count's MFU beside its own.
  EXPECT_NEAR(full.mfu_other_count, causal.mfu, 1e-12);
  EXPECT_NEAR(causal.mfu_other_count, full.mfu, 1e-12);
  EXPECT_NEAR(full.tflops_per_gpu * 1e12, full.mfu * a.gpu->PeakFlops(s.dtype),
              1e-9 * full.tflops_per_gpu * 1e12);
  bool said = false;
  for (const std::string& x : causal.assumptions) said |= absl::StrContains(x, "halved");
  EXPECT_TRUE(said);
  EXPECT_NEAR(KernelMfu(a, FlopCount::kCausal) / KernelMfu(a, FlopCount::kFull),
              a.flops.causal_model_flops / a.flops.model_flops, 1e-12);
}

TEST(ModelStatsTest, ParseFlopCountNamesTheAllowedValues) {
  EXPECT_EQ(*ParseFlopCount(""), FlopCount::kFull);
  EXPECT_EQ(*ParseFlopCount("full"), FlopCount::kFull);
  EXPECT_EQ(*ParseFlopCount("causal"), FlopCount::kCausal);
  const absl::StatusOr<FlopCount> bad = ParseFlopCount("half");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("allowed: full"));
  EXPECT_THAT(bad.status().message(), HasSubstr("causal"));
  EXPECT_EQ(FlopCountName(FlopCount::kCausal), "causal");
}

}  // namespace
}  // namespace wavecrest
