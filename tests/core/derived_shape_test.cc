// The sizes a spec implies (core/derived_shape.h): per tensor-parallel rank, per context-parallel
// rank, dense and MoE layers, the experts' tensor parallelism, and local attention patterns.
#include "core/derived_shape.h"

#include "core/model_spec.h"
#include "tests/core/test_specs.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

// Llama 3 70B on eight tensor-parallel ranks: every width divides by t, the vocabulary rounds up
// and the eight KV heads leave one per rank.
TEST(DerivedShapeTest, WidthsArePerTensorParallelRank) {
  ModelSpec s = testing::LlamaLike(8192, 64, 8, 80, 28672, 128256);
  s.tensor_parallel = 8;
  s.seq_length = 4096;
  s.micro_batch_size = 2;
  const DerivedShape d = Derive(*NormalizeSpec(s));
  EXPECT_EQ(d.head_dim, 128);
  EXPECT_EQ(d.q_width, 8192);
  EXPECT_EQ(d.kv_width, 1024);
  EXPECT_EQ(d.heads_per_rank, 8);
  EXPECT_EQ(d.kv_heads_per_rank, 1);
  EXPECT_EQ(d.ffn_per_rank, 3584);
  EXPECT_EQ(d.vocab_per_rank, 16032);
  EXPECT_EQ(d.tokens, 2 * 4096);
  EXPECT_EQ(d.active_ffn_per_rank, 3584);
  EXPECT_EQ(d.moe_layers, 0);
  EXPECT_EQ(d.dense_layers, 80);
  EXPECT_EQ(d.window_layers, 0);
  // More ranks than KV heads: the KV heads are replicated, one per rank.
  s.tensor_parallel = 16;
  EXPECT_EQ(Derive(WithDefaults(s)).kv_heads_per_rank, 1);
}

// Context parallelism splits the sequence; decode's rows are the batch's tokens, one each.
TEST(DerivedShapeTest, TokensAreTheRowsOfOneRanksLinearGemms) {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  s.seq_length = 8192;
  s.micro_batch_size = 2;
  s.context_parallel = 4;
  const DerivedShape d = Derive(WithDefaults(s));
  EXPECT_EQ(d.seq_per_rank, 2048);
  EXPECT_EQ(d.tokens, 2 * 2048);
  s.context_parallel = 1;
  s.workload = Workload::kDecode;
  EXPECT_EQ(Derive(WithDefaults(s)).tokens, 2);
}

// DeepSeek-style: the first layer dense, then every second layer MoE, the dense ones with their
// own width; the experts whole on each rank when expert_tensor_parallel is 1.
TEST(DerivedShapeTest, MixedDenseAndMoeLayers) {
  ModelSpec s = testing::LlamaLike(2048, 16, 16, 9, 1408, 102400);
  s.num_experts = 64;
  s.experts_per_token = 6;
  s.first_dense_layers = 1;
  s.moe_layer_interval = 2;
  s.dense_ffn_hidden_size = 10944;
  s.tensor_parallel = 2;
  s = WithDefaults(s);
  const DerivedShape d = Derive(s);
  EXPECT_EQ(d.moe_layers, 4);
  EXPECT_EQ(d.dense_layers, 5);
  EXPECT_EQ(d.dense_ffn_per_rank, 10944 / 2);
  EXPECT_EQ(DenseFfnWidth(s), 10944);
  EXPECT_EQ(ExpertTensorParallel(s), 2);
  EXPECT_EQ(d.expert_ffn_per_rank, 1408 / 2);
  s.expert_tensor_parallel = 1;
  EXPECT_EQ(ExpertTensorParallel(s), 1);
  EXPECT_EQ(Derive(s).expert_ffn_per_rank, 1408);
  // A dense model's MLP is its ffn_hidden_size, whatever dense_ffn_hidden_size says.
  ModelSpec dense = s;
  dense.num_experts = 0;
  EXPECT_EQ(DenseFfnWidth(dense), 1408);
}

TEST(DerivedShapeTest, GroupLimitedRoutingNeedsFewerGroupsPerTokenThanGroups) {
  ModelSpec s;
  s.expert_groups = 8;
  s.expert_groups_per_token = 4;
  EXPECT_TRUE(GroupLimitedRouting(s));
  s.expert_groups_per_token = 8;
  EXPECT_FALSE(GroupLimitedRouting(s));
  s.expert_groups_per_token = 0;
  EXPECT_FALSE(GroupLimitedRouting(s));
}

// Gemma 3's five local layers in six, GPT-OSS's alternation; a count no period gives has none.
TEST(DerivedShapeTest, LocalLayerPatternsKeepTheirPeriod) {
  EXPECT_EQ(LocalLayerPeriod(62, 52), 6);
  EXPECT_EQ(LocalLayerPeriod(24, 12), 2);
  EXPECT_EQ(LocalLayerPeriod(7, 3), 0);
  EXPECT_EQ(LocalLayerPeriod(24, 24), 0);
  EXPECT_EQ(LocalLayerPeriod(24, 0), 0);
  EXPECT_EQ(LocalLayersFor(48, 62, 52), 40);  // the period of six kept
  EXPECT_EQ(LocalLayersFor(10, 4, 4), 10);    // all local stays all
  EXPECT_EQ(LocalLayersFor(10, 7, 3), 4);     // no period: the same share, rounded
  EXPECT_EQ(LocalLayersFor(10, 7, 0), 0);
}

}  // namespace
}  // namespace wavecrest
