#include "core/layers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/analysis.h"
#include "core/cost_model.h"
#include "core/elementwise_cost.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

ModelSpec Llama8bTp2() {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  s.tensor_parallel = 2;
  s.micro_batch_size = 2;
  s.seq_length = 4096;
  return *NormalizeSpec(s);
}

TEST(LayersTest, KeyIsOneLayerOneRank) {
  const ModelSpec m = Llama8bTp2();
  auto key = MakeLayerKey(LayerKind::kTransformerLayer, m);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(key->layer.num_layers, 1);
  EXPECT_EQ(key->layer.tensor_parallel, 1);
  EXPECT_EQ(key->layer.num_attention_heads, 16);
  EXPECT_EQ(key->layer.num_kv_heads, 4);
  EXPECT_EQ(key->layer.head_dim, 128);
  EXPECT_EQ(key->layer.ffn_hidden_size, 7168);
  EXPECT_EQ(LayerKeyString(*key),
            "transformer_layer bf16 training b2 sq4096 skv4096 h4096 heads16/4 d128 causal "
            "ffn7168 swiglu rmsnorm flash");
  // The key of a key's own spec is the key: the worker may be sent either.
  auto again = MakeLayerKey(key->kind, key->layer);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *key);
}

TEST(LayersTest, LayerGemmsAreTheModelsPerLayerGemms) {
  const ModelSpec m = Llama8bTp2();
  auto key = MakeLayerKey(LayerKind::kTransformerLayer, m);
  ASSERT_TRUE(key.ok());
  std::vector<Gemm> model_gemms = BuildGemms(m);
  std::erase_if(model_gemms, [](const Gemm& g) { return g.name == kLogits; });
  const std::vector<Gemm> layer = LayerGemms(*key);
  ASSERT_EQ(layer.size(), model_gemms.size());
  for (size_t i = 0; i < layer.size(); ++i) {
    EXPECT_EQ(layer[i].name, model_gemms[i].name);
    EXPECT_EQ(layer[i].key(), model_gemms[i].key()) << layer[i].name;
    EXPECT_EQ(layer[i].count, 1);
  }
}

TEST(LayersTest, ModelsWithTheSameLayerShareAKey) {
  ModelSpec a = Llama8bTp2();
  ModelSpec b = a;
  b.name = "other";
  b.num_layers = 40;
  b.vocab_size = 32000;
  b.pipeline_parallel = 2;
  b = *NormalizeSpec(b);
  EXPECT_EQ(*MakeLayerKey(LayerKind::kTransformerLayer, a),
            *MakeLayerKey(LayerKind::kTransformerLayer, b));
  // Attention keys ignore the MLP too.
  b.ffn_hidden_size = 11008;
  b.mlp = Mlp::kGelu;
  b = *NormalizeSpec(b);
  EXPECT_EQ(*MakeLayerKey(LayerKind::kFusedAttention, a),
            *MakeLayerKey(LayerKind::kFusedAttention, b));
  EXPECT_NE(*MakeLayerKey(LayerKind::kTransformerLayer, a),
            *MakeLayerKey(LayerKind::kTransformerLayer, b));
}

TEST(LayersTest, AttentionKindMustMatchTheModel) {
  const ModelSpec flash = testing::Pythia28(Attention::kFlash);
  auto st = MakeLayerKey(LayerKind::kUnfusedAttention, flash);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.status().message(), HasSubstr("unfused_attention"));
  const std::vector<LayerKey> keys = LayerKeysOf(testing::Pythia28(Attention::kUnfused));
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].kind, LayerKind::kUnfusedAttention);
  EXPECT_EQ(keys[1].kind, LayerKind::kTransformerLayer);
  EXPECT_EQ(*ParseLayerKind("unfused_attention"), LayerKind::kUnfusedAttention);
  EXPECT_THAT(ParseLayerKind("mlp").status().message(), HasSubstr("allowed: fused_attention"));
}

// The worker times cuDNN's fused kernel: a model on another named kernel has no layer it could time
// honestly, so none is asked for (its layers are predicted), and a direct request says why.
TEST(LayersTest, OlderFusedKernelsAreNotTimedAsCudnns) {
  for (Attention old : {Attention::kFlash2, Attention::kFlash1, Attention::kFlash1Triton}) {
    const ModelSpec m = testing::Pythia28(old);
    EXPECT_TRUE(LayerKeysOf(m).empty());
    for (LayerKind kind : {LayerKind::kFusedAttention, LayerKind::kTransformerLayer}) {
      auto st = MakeLayerKey(kind, m);
      EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(st.status().message(), HasSubstr("predicted only"));
      EXPECT_THAT(st.status().message(), HasSubstr(std::string(AttentionName(old))));
    }
  }
}

// The layer predictions add up to the step the model predicts: L layers + logits + loss.
TEST(LayersTest, LayersSumToTheStep) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  for (Attention att : {Attention::kFlash, Attention::kUnfused}) {
    const ModelSpec m = testing::Pythia28(att);
    auto analysis = Analyze(m, gpu);
    ASSERT_TRUE(analysis.ok());
    const LayerPrediction layer = PredictLayer(gpu, *MakeLayerKey(LayerKind::kTransformerLayer, m));
    double logits = 0;
    for (const GemmAnalysis& g : analysis->gemms) {
      if (g.gemm.name == kLogits) logits += g.prediction.time_s * g.gemm.count;
    }
    const double step = m.num_layers * layer.time_s + logits + analysis->elementwise.loss_time_s;
    EXPECT_NEAR(step, analysis->step_time_s, 1e-9 * analysis->step_time_s);
    EXPECT_GT(layer.band_p90, layer.band_p10);
    EXPECT_NEAR(layer.tflops, layer.flops / layer.time_s / 1e12, 1e-9);
  }
}

// Unfused attention carries its softmax; fused attention none of the elementwise work.
TEST(LayersTest, AttentionPredictions) {
  const GpuSpec& gpu = **FindGpu("a100-sxm4-80gb");
  const ModelSpec unfused = testing::Pythia28(Attention::kUnfused);
  const LayerPrediction u = PredictLayer(gpu, *MakeLayerKey(LayerKind::kUnfusedAttention, unfused));
  EXPECT_GT(u.elementwise_time_s, 0);
  EXPECT_NEAR(u.elementwise_time_s, EstimateElementwise(unfused, gpu).softmax_time_s, 1e-15);
  const LayerPrediction f = PredictLayer(
      gpu, *MakeLayerKey(LayerKind::kFusedAttention, testing::Pythia28(Attention::kFlash)));
  EXPECT_EQ(f.elementwise_time_s, 0);
  // Products of s×s×d per head: fused 2 + 5 (backward recomputes S), unfused 2 + 4.
  EXPECT_NEAR(f.flops / u.flops, 7.0 / 6.0, 1e-12);
  // Flash is the faster of the two at s = 2048.
  EXPECT_LT(f.time_s, u.time_s);
}

// A model mixing dense and MoE layers (DeepSeek's first dense layers, Llama 4's interleave) has a
// key for each, with their counts; the stack's FLOPs are the model's.
TEST(LayersTest, MixedDenseAndMoeStack) {
  ModelSpec s = testing::LlamaLike(1024, 16, 16, 12, 512, 1000);
  s.num_experts = 16;
  s.experts_per_token = 2;
  s.first_dense_layers = 2;
  s.dense_ffn_hidden_size = 2816;
  s.shared_expert_ffn_hidden_size = 512;
  const ModelSpec m = *NormalizeSpec(s);
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(m);
  ASSERT_TRUE(stack.ok()) << stack.status();
  ASSERT_EQ(stack->size(), 3u);  // attention, the MoE layer, the dense layer
  EXPECT_EQ((*stack)[0].key.kind, LayerKind::kFusedAttention);
  EXPECT_EQ((*stack)[0].layers, 12);
  EXPECT_EQ((*stack)[0].role, "");
  EXPECT_EQ((*stack)[1].role, "MoE");
  EXPECT_EQ((*stack)[1].layers, 10);
  EXPECT_EQ((*stack)[1].key.layer.num_experts, 16);
  EXPECT_EQ((*stack)[2].role, "dense");
  EXPECT_EQ((*stack)[2].layers, 2);
  EXPECT_EQ((*stack)[2].key.layer.num_experts, 0);
  EXPECT_EQ((*stack)[2].key.layer.ffn_hidden_size, 2816);
  double stack_flops = 0;
  for (const LayerUse& u : *stack) {
    if (u.key.kind == LayerKind::kTransformerLayer) stack_flops += u.layers * LayerFlops(u.key);
  }
  double model_flops = 0;
  for (const Gemm& g : BuildGemms(m)) model_flops += g.name == kLogits ? 0 : g.step_flops();
  EXPECT_NEAR(stack_flops, model_flops, 1e-9 * model_flops);
  auto one = MakeLayerKey(LayerKind::kTransformerLayer, m);
  EXPECT_EQ(one.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(one.status().message(), HasSubstr("MoE and dense"));
  EXPECT_EQ(LayerKeysOf(m).size(), 3u);
}

TEST(LayersTest, ExpertParallelKeyIsTheRanksShareAndRoutingIsPartOfIt) {
  ModelSpec s = testing::LlamaLike(1024, 16, 16, 4, 512, 1000);
  s.num_experts = 16;
  s.experts_per_token = 2;
  s.expert_parallel = 4;
  s.tensor_parallel = 2;
  const ModelSpec m = *NormalizeSpec(s);
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, m);
  EXPECT_EQ(key.layer.expert_parallel, 4);
  EXPECT_EQ(key.layer.ffn_hidden_size, 256);  // an expert's width over t = 2
  EXPECT_EQ(Derive(key.layer).experts_per_rank, 4);
  EXPECT_EQ(Derive(key.layer).expert_tokens, Derive(m).expert_tokens);
  EXPECT_THAT(LayerKeyString(key), HasSubstr("moe16x2 ep4"));
  const LayerKey skewed =
      *MakeLayerKey(LayerKind::kTransformerLayer, m, DefaultRole(m), MoeRouting{1.5, {}});
  EXPECT_NE(skewed, key);
  EXPECT_THAT(LayerKeyString(skewed), HasSubstr("ep4 zipf1.5"));
  // Counts must fit the experts.
  auto bad = MakeLayerKey(LayerKind::kTransformerLayer, m, DefaultRole(m), MoeRouting{0, {1, 2}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  // Whole experts under tensor parallelism: no one-rank key stands for them; the stack says why.
  s.expert_tensor_parallel = 1;
  s.expert_parallel = 8;
  const ModelSpec whole = *NormalizeSpec(s);
  EXPECT_EQ(MakeLayerKey(LayerKind::kTransformerLayer, whole).status().code(),
            absl::StatusCode::kUnimplemented);
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(whole);
  ASSERT_TRUE(stack.ok());  // the attention still has its key
  EXPECT_EQ(stack->size(), 1u);
}

}  // namespace
}  // namespace wavecrest
