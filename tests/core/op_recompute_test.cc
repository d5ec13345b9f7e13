#include "core/op_recompute.h"

#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/memory.h"
#include "core/parallelism.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::wavecrest::testing::H100;
using ::wavecrest::testing::LlamaLike;

// Llama 3.1 8B at 8K tokens, 2 sequences a micro-batch (TorchTitan's Table 1 run).
ModelSpec Llama8B() {
  ModelSpec s = LlamaLike(4096, 32, 8, 32, 14336, 128256);
  s.seq_length = 8192;
  s.micro_batch_size = 2;
  return *NormalizeSpec(s);
}

double ForwardS(const Analysis& a, absl::string_view name) {
  double t = 0;
  for (const GemmAnalysis& g : a.gemms) {
    if (g.gemm.pass == Pass::kForward && g.gemm.name == name) {
      t += g.prediction.time_s * static_cast<double>(g.gemm.count);
    }
  }
  return t;
}

// The block's mms run wq(1) wk(2) wv(3) wo(4) w1(5) w3(6) w2(7): the even ones, wk, wo and w3,
// run again, with the layers' forward elementwise work; attention's kernel is kept.
TEST(OpRecomputeTest, EverySecondMatmulOfALlamaBlockRunsAgain) {
  const absl::StatusOr<Analysis> a = Analyze(Llama8B(), H100());
  ASSERT_TRUE(a.ok()) << a.status();
  const double wk = ForwardS(*a, kQkv) * 1024 / (4096 + 2 * 1024);
  const double wo = ForwardS(*a, kAttnProj);
  const double w3 = ForwardS(*a, kMlpGateUp) / 2;
  const double elementwise =
      32 * (a->elementwise.layer_time_s - a->elementwise.softmax_time_s) / 3;
  EXPECT_NEAR(OpRecomputeForwardS(*a), wk + wo + w3 + elementwise, 1e-12);
  EXPECT_GT(wk, 0);
  EXPECT_GT(w3, wo);
}

// It sits between Megatron's selective recomputation (nothing more with FlashAttention) and full
// recomputation, in time and in memory.
TEST(OpRecomputeTest, CostsLessThanFullRecomputationAndKeepsLess) {
  const ModelSpec s = Llama8B();
  const absl::StatusOr<Analysis> a = Analyze(s, H100());
  ASSERT_TRUE(a.ok()) << a.status();
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 16;
  run.zero_stage = 3;
  double recompute[3], activations[3];
  int i = 0;
  for (Recompute r : {Recompute::kSelective, Recompute::kOp, Recompute::kFull}) {
    run.recompute = r;
    const absl::StatusOr<StepBreakdown> b = PlanStep(*a, run);
    ASSERT_TRUE(b.ok()) << b.status();
    recompute[i] = b->recompute_s;
    activations[i++] = b->memory.activations_bytes;
  }
  EXPECT_EQ(recompute[0], 0);
  EXPECT_GT(recompute[1], 0);
  EXPECT_LT(recompute[1], recompute[2]);
  EXPECT_LT(activations[1], activations[0]);
  EXPECT_GT(activations[1], activations[2]);
}

// Kept per token and layer, 16-bit: the layer's input (4096), wq's output (4096), wv's (1024),
// attention's (4096), w1's (14336) and w2's (4096).
TEST(OpRecomputeTest, KeepsTheInputTheOddMatmulsAndAttentionsOutput) {
  const ModelSpec s = Llama8B();
  EXPECT_DOUBLE_EQ(OpRecomputeStoredBytesPerToken(s, Derive(s), false),
                   2.0 * (4096 + 4096 + 1024 + 4096 + 14336 + 4096));
  // A GELU block runs wq wk wv wo up down: wq, wv and up are kept; under tensor parallelism
  // with sequence parallelism every width is a rank's.
  ModelSpec gelu = testing::SmallGpt(2048, 2, 2048);
  gelu.tensor_parallel = 2;
  gelu = *NormalizeSpec(gelu);
  EXPECT_DOUBLE_EQ(OpRecomputeStoredBytesPerToken(gelu, Derive(gelu), true),
                   2.0 * (2048 / 2 + 1024 + 1024 + 1024 + 4 * 2048 / 2));
}

// Eager PyTorch adds its unfused elementwise traffic to every layer's forward and backward, and
// the op-level policy runs its forward share again.
TEST(OpRecomputeTest, EagerKernelsAddToTheStepAndToWhatIsRecomputed) {
  const absl::StatusOr<Analysis> a = Analyze(Llama8B(), H100());
  ASSERT_TRUE(a.ok()) << a.status();
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 16;
  run.zero_stage = 3;
  run.recompute = Recompute::kOp;
  const absl::StatusOr<StepBreakdown> fused = PlanStep(*a, run);
  run.eager = true;
  const absl::StatusOr<StepBreakdown> eager = PlanStep(*a, run);
  ASSERT_TRUE(fused.ok() && eager.ok());
  const double extra = 32 * EagerExtraLayerTimeS(a->spec, H100());  // one micro-batch
  EXPECT_NEAR(eager->compute_s - fused->compute_s, extra, 1e-9);
  EXPECT_NEAR(eager->recompute_s - fused->recompute_s, extra / 3, 1e-9);
  bool said = false;
  for (const std::string& line : eager->assumptions) said |= line.find("eager PyTorch") == 0;
  EXPECT_TRUE(said);
  // Compiled, with the rotary embedding alone unfused (TorchTitan's complex RoPE): its share of
  // eager's extra, 20 bytes an element of the queries and keys; eager implies it.
  run.eager = false;
  run.rope_unfused = true;
  const absl::StatusOr<StepBreakdown> rope = PlanStep(*a, run);
  ASSERT_TRUE(rope.ok());
  EXPECT_DOUBLE_EQ(RopeUnfusedBytesPerToken(a->spec), 20.0 * (4096 + 1024));
  const double rope_extra = 32 * RopeUnfusedLayerTimeS(a->spec, H100());
  EXPECT_NEAR(rope->compute_s - fused->compute_s, rope_extra, 1e-9);
  EXPECT_NEAR(rope->recompute_s - fused->recompute_s, rope_extra / 3, 1e-9);
  EXPECT_LT(rope_extra, extra);
  said = false;
  for (const std::string& line : rope->assumptions) said |= line.find("the rotary embedding as") == 0;
  EXPECT_TRUE(said);
  run.eager = true;
  EXPECT_DOUBLE_EQ(PlanStep(*a, run)->compute_s, eager->compute_s);
}

}  // namespace
}  // namespace wavecrest
