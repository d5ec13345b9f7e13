// Hybrid models (ModelSpec::hybrid_pattern): Mamba-2, attention, MLP and MoE layers, one a layer.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/hf_export.h"
#include "core/hf_import.h"
#include "core/layers.h"
#include "core/memory.h"
#include "core/model_stats.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

// Nemotron 3 Nano 30B-A3B's shape (examples/models/hf/nemotron-3-nano-30b-a3b.json).
constexpr char kNanoPattern[] = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";

ModelSpec Nano() {
  ModelSpec s;
  s.hidden_size = 2688;
  s.num_attention_heads = 32;
  s.num_kv_heads = 2;
  s.head_dim = 128;
  s.hybrid_pattern = kNanoPattern;
  s.num_experts = 128;
  s.experts_per_token = 6;
  s.ffn_hidden_size = 1856;
  s.shared_expert_ffn_hidden_size = 3712;
  s.mamba_heads = 64;
  s.mamba_head_dim = 64;
  s.mamba_state_dim = 128;
  s.mamba_groups = 8;
  s.vocab_size = 131072;
  s.seq_length = 8192;
  s.norm = Norm::kRmsNorm;
  return s;
}

std::string Fields(const std::vector<FieldViolation>& v) {
  std::string out;
  for (const FieldViolation& f : v) out += f.field + ": " + f.description + "\n";
  return out;
}

bool HasViolation(const ModelSpec& s, const std::string& field, const std::string& words) {
  for (const FieldViolation& f : Validate(WithDefaults(s))) {
    if (f.field == field && f.description.find(words) != std::string::npos) return true;
  }
  return false;
}

TEST(HybridTest, PatternGivesTheLayersAndMambaDefaults) {
  absl::StatusOr<ModelSpec> s = NormalizeSpec(Nano());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_layers, 52);
  EXPECT_EQ(s->mamba_conv_kernel, 4);  // Megatron-Core's defaults
  EXPECT_EQ(s->mamba_chunk_size, 128);
  const DerivedShape d = Derive(*s);
  EXPECT_EQ(d.attention_layers, 6);
  EXPECT_EQ(d.mamba_layers, 23);
  EXPECT_EQ(d.moe_layers, 23);
  EXPECT_EQ(d.dense_layers, 0);
  EXPECT_EQ(d.mamba_inner_per_rank, 4096);
  EXPECT_EQ(d.mamba_conv_per_rank, 4096 + 2 * 8 * 128);
  EXPECT_EQ(d.mamba_in_proj_per_rank, 4096 + 6144 + 64);
  // Heads default to 2h / head dim (Megatron-Core's expand 2).
  ModelSpec dflt = Nano();
  dflt.mamba_heads = 0;
  EXPECT_EQ(WithDefaults(dflt).mamba_heads, 2 * 2688 / 64);
}

TEST(HybridTest, ValidationNamesTheFieldAndTheAllowedValues) {
  ModelSpec s = Nano();
  s.hybrid_pattern = "M*X-";
  EXPECT_TRUE(HasViolation(s, "hybrid_pattern", "allowed: M (Mamba-2 mixer), * (attention)"))
      << Fields(Validate(WithDefaults(s)));
  s = Nano();
  s.num_layers = 48;
  EXPECT_TRUE(HasViolation(s, "num_layers", "length of hybrid_pattern (52"));
  s = Nano();
  s.num_experts = 0;
  s.experts_per_token = 0;
  s.shared_expert_ffn_hidden_size = 0;
  EXPECT_TRUE(HasViolation(s, "num_experts", "'E' (mixture-of-experts) layers"));
  s = Nano();
  s.hybrid_pattern = "M*M*";
  EXPECT_TRUE(HasViolation(s, "hybrid_pattern", "needs 'E' layers"));
  s = Nano();
  s.context_parallel = 2;
  EXPECT_TRUE(HasViolation(s, "context_parallel", "Mamba-2"));
  s = Nano();
  s.tensor_parallel = 16;  // divides the heads (32) but not the 8 Mamba groups
  EXPECT_TRUE(HasViolation(s, "tensor_parallel", "mamba_groups (8"));
  s = Nano();
  s.mamba_groups = 7;
  EXPECT_TRUE(HasViolation(s, "mamba_groups", "must divide mamba_heads (64)"));
  s = Nano();
  s.hybrid_pattern.clear();
  s.num_layers = 52;
  s.num_experts = 0;
  s.experts_per_token = 0;
  s.shared_expert_ffn_hidden_size = 0;
  EXPECT_TRUE(HasViolation(s, "hybrid_pattern", "mamba_* fields"));
}

// A hybrid "*-" pair of layers is a transformer layer: the same GEMMs, parameters, elementwise
// bytes and activations, block for block.
TEST(HybridTest, AttentionAndMlpLayersPairedAreATransformerLayer) {
  ModelSpec t;
  t.hidden_size = 2048;
  t.num_attention_heads = 16;
  t.num_kv_heads = 4;
  t.num_layers = 3;
  t.mlp = Mlp::kSwiglu;
  t.norm = Norm::kRmsNorm;
  t.vocab_size = 32000;
  t.seq_length = 4096;
  t.tensor_parallel = 2;
  for (DType dtype : {DType::kBf16, DType::kFp8E4M3}) {
    t.dtype = dtype;
    ModelSpec h = t;
    h.num_layers = 0;
    h.hybrid_pattern = "*-*-*-";
    const ModelSpec a = *NormalizeSpec(t), b = *NormalizeSpec(h);
    std::map<std::tuple<std::string, int, int64_t, int64_t, int64_t>, int64_t> ga, gb;
    for (const Gemm& g : BuildGemms(a)) {
      ga[{g.name, static_cast<int>(g.pass), g.shape.m, g.shape.n, g.shape.k}] += g.count;
    }
    for (const Gemm& g : BuildGemms(b)) {
      gb[{g.name, static_cast<int>(g.pass), g.shape.m, g.shape.n, g.shape.k}] += g.count;
    }
    EXPECT_EQ(ga, gb);
    EXPECT_EQ(CountParams(a).total_params, CountParams(b).total_params);
    const GpuSpec& gpu = **FindGpu("h100-sxm");
    EXPECT_NEAR(EstimateElementwise(b, gpu).bytes / EstimateElementwise(a, gpu).bytes, 1, 1e-12);
    EXPECT_NEAR(EstimateMemory(b, gpu).activations_bytes /
                    EstimateMemory(a, gpu).activations_bytes,
                1, 1e-12);
  }
}

TEST(HybridTest, MambaMixersRunTheirProjectionsAndTheChunkedScan) {
  ModelSpec s = Nano();
  s.tensor_parallel = 2;
  s.micro_batch_size = 2;
  const ModelSpec n = *NormalizeSpec(s);
  std::map<std::string, Gemm> forward;
  for (const Gemm& g : BuildGemms(n)) {
    if (g.pass == Pass::kForward) forward[g.name] = g;
  }
  const int64_t tokens = 2 * 8192, chunks = 2 * 8192 / 128;
  EXPECT_EQ(forward[std::string(kQkv)].count, 6);
  EXPECT_EQ(forward[std::string(kAttnProj)].count, 6);
  const Gemm& in = forward[std::string(kMambaInProj)];
  EXPECT_EQ(in.count, 23);
  EXPECT_EQ(in.shape, (GemmShape{tokens, (4096 + 6144 + 64) / 2, 2688, 1}));
  EXPECT_EQ(forward[std::string(kMambaOutProj)].shape, (GemmShape{tokens, 2688, 2048, 1}));
  // C·Bᵀ per group, the rest per head, over the micro-batch's chunks, on this rank's half.
  EXPECT_EQ(forward[std::string(kSsdCb)].shape, (GemmShape{128, 128, 128, chunks * 4}));
  EXPECT_EQ(forward[std::string(kSsdDiag)].shape, (GemmShape{128, 64, 128, chunks * 32}));
  EXPECT_EQ(forward[std::string(kSsdState)].shape, (GemmShape{128, 64, 128, chunks * 32}));
  EXPECT_EQ(forward[std::string(kSsdOff)].shape, (GemmShape{128, 64, 128, chunks * 32}));
  // The scan stays BF16 in an FP8 run; the projections go FP8.
  s.dtype = DType::kFp8E4M3;
  for (const Gemm& g : BuildGemms(*NormalizeSpec(s))) {
    if (IsSsdGemm(g.name)) {
      EXPECT_EQ(g.dtype, DType::kBf16) << g.name;
    }
    if (g.name == kMambaInProj) {
      EXPECT_EQ(g.dtype, DType::kFp8E4M3);
    }
  }
}

// Decode keeps keys and values for the attention layers only; a Mamba-2 layer's state does not
// grow with the context.
TEST(HybridTest, DecodeCachesGrowWithTheAttentionLayersOnly) {
  ModelSpec s = Nano();
  s.workload = Workload::kDecode;
  s.kv_cache_length = 4096;
  const double at4k = KvCacheBytes(*NormalizeSpec(s));
  s.kv_cache_length = 8192;
  const double at8k = KvCacheBytes(*NormalizeSpec(s));
  const double per_token = 2.0 * 2 * 128 * 2;  // K and V of 2 KV heads of 128, 16-bit
  EXPECT_DOUBLE_EQ(at8k - at4k, 6 * 4096 * per_token);
  // The 23 states: 64 heads x 64 x 128 in FP32, and 3 taps of 6144 conv channels in BF16.
  EXPECT_DOUBLE_EQ(at4k - 6 * 4096 * per_token, 23 * (64.0 * 64 * 128 * 4 + 3 * 6144 * 2));
  EXPECT_DOUBLE_EQ(KvCacheBytesPerToken(*NormalizeSpec(s)), 6 * per_token);
  // One token's step reads each head's state through C.
  bool state_read = false;
  for (const Gemm& g : BuildGemms(*NormalizeSpec(s))) {
    if (g.name == kSsdOff) {
      state_read = true;
      EXPECT_EQ(g.shape, (GemmShape{1, 64, 128, 64}));
    }
    EXPECT_FALSE(g.name == kSsdCb || g.name == kSsdDiag) << g.name;
  }
  EXPECT_TRUE(state_read);
}

TEST(HybridTest, AttentionLayersAreTheStackTimedWhole) {
  const ModelSpec n = *NormalizeSpec(Nano());
  // Its six attention layers are the stack; no whole-layer key stands for the other blocks.
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(n);
  ASSERT_TRUE(stack.ok()) << stack.status();
  ASSERT_EQ(stack->size(), 1u);
  EXPECT_EQ((*stack)[0].key.kind, LayerKind::kFusedAttention);
  EXPECT_EQ((*stack)[0].layers, 6);
  absl::StatusOr<LayerKey> whole = MakeLayerKey(LayerKind::kTransformerLayer, n);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(whole.status().message().find("hybrid"), std::string::npos);
  // A pattern without attention has nothing to time whole.
  ModelSpec mamba = Nano();
  mamba.hybrid_pattern = "MEME";
  EXPECT_FALSE(LayerStackOf(*NormalizeSpec(mamba)).ok());
  absl::StatusOr<LayerKey> attention = MakeLayerKey(LayerKind::kFusedAttention, n);
  ASSERT_TRUE(attention.ok()) << attention.status();
  EXPECT_TRUE(attention->layer.hybrid_pattern.empty());
}

TEST(HybridTest, NemotronHConfigRoundTrips) {
  const ModelSpec n = *NormalizeSpec(Nano());
  absl::StatusOr<std::string> text = ExportHfConfig(n);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(text->find("\"NemotronHForCausalLM\""), std::string::npos);
  EXPECT_NE(text->find(kNanoPattern), std::string::npos);
  absl::StatusOr<ModelSpec> back = ImportHfConfig(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  absl::StatusOr<ModelSpec> nb = NormalizeSpec(*back);
  ASSERT_TRUE(nb.ok()) << nb.status();
  EXPECT_EQ(nb->hybrid_pattern, n.hybrid_pattern);
  EXPECT_EQ(CountParams(*nb).total_params, CountParams(n).total_params);
  EXPECT_EQ(BuildGemms(*nb).size(), BuildGemms(n).size());
  // A pipeline split marker is dropped; a config without a pattern is refused by name.
  const std::string piped = R"({"architectures": ["NemotronHForCausalLM"], "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 4, "vocab_size": 1000,
      "intermediate_size": 1024, "hybrid_override_pattern": "M-|M*"})";
  absl::StatusOr<ModelSpec> p = ImportHfConfig(piped);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->hybrid_pattern, "M-M*");
  EXPECT_TRUE(NormalizeSpec(*p).ok()) << NormalizeSpec(*p).status();
  const std::string none = R"({"architectures": ["NemotronHForCausalLM"], "hidden_size": 256,
      "num_attention_heads": 4, "num_hidden_layers": 4, "vocab_size": 1000,
      "intermediate_size": 1024})";
  absl::StatusOr<ModelSpec> q = ImportHfConfig(none);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("hybrid_override_pattern"), std::string::npos);
}

}  // namespace
}  // namespace wavecrest
