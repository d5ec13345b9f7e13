#include "core/gemm.h"

#include <map>
#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "core/attention_cost.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "tests/core/test_specs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using GemmId = std::tuple<std::string, Pass>;

std::map<GemmId, Gemm> ByName(const std::vector<Gemm>& gemms) {
  std::map<GemmId, Gemm> out;
  for (const Gemm& g : gemms) {
    EXPECT_TRUE(out.emplace(GemmId{g.name, g.pass}, g).second) << "duplicate " << g.name;
  }
  return out;
}

void ExpectGemm(const std::map<GemmId, Gemm>& m, const std::string& name, Pass pass,
                GemmShape shape, Layout layout, int64_t count) {
  auto it = m.find({name, pass});
  ASSERT_NE(it, m.end()) << name << " " << PassName(pass);
  EXPECT_EQ(it->second.shape, shape)
      << name << " " << PassName(pass) << ": got " << it->second.shape.m << "x"
      << it->second.shape.n << "x" << it->second.shape.k << " b" << it->second.shape.batch;
  EXPECT_EQ(it->second.layout, layout) << name << " " << PassName(pass);
  EXPECT_EQ(it->second.count, count) << name << " " << PassName(pass);
  EXPECT_DOUBLE_EQ(it->second.flops, GemmFlops(shape));
}

// The paper's sample layer: h = 4096, a = 16, b = 4, s = 2048, v = 51200, t = 1, GELU, unfused.
ModelSpec PaperLayer() {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 16;
  s.num_layers = 1;
  s.vocab_size = 51200;
  s.seq_length = 2048;
  s.micro_batch_size = 4;
  s.attention = Attention::kUnfused;
  return *NormalizeSpec(s);
}

TEST(GemmTest, PaperSampleLayerEveryGemmAndPass) {
  const auto m = ByName(BuildGemms(PaperLayer()));
  EXPECT_EQ(m.size(), 21u);  // 4 linears + logits, 3 passes each; 2 attention GEMMs, 3 passes
  const int64_t T = 8192;    // b·s
  ExpectGemm(m, "qkv", Pass::kForward, {T, 12288, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "qkv", Pass::kDgrad, {T, 4096, 12288, 1}, Layout::kNN, 1);
  ExpectGemm(m, "qkv", Pass::kWgrad, {12288, 4096, T, 1}, Layout::kNT, 1);
  // 64 batches (b·a/t) of 2048 × 2048 with K = 256 (h/a).
  ExpectGemm(m, "attn_score", Pass::kForward, {2048, 2048, 256, 64}, Layout::kTN, 1);
  ExpectGemm(m, "attn_score", Pass::kDgrad, {2048, 256, 2048, 64}, Layout::kNN, 1);  // dQ
  ExpectGemm(m, "attn_score", Pass::kWgrad, {2048, 256, 2048, 64}, Layout::kNT, 1);  // dK
  ExpectGemm(m, "attn_over_value", Pass::kForward, {2048, 256, 2048, 64}, Layout::kNN, 1);
  ExpectGemm(m, "attn_over_value", Pass::kDgrad, {2048, 2048, 256, 64}, Layout::kTN, 1);  // dP
  ExpectGemm(m, "attn_over_value", Pass::kWgrad, {2048, 256, 2048, 64}, Layout::kNT, 1);  // dV
  ExpectGemm(m, "attn_proj", Pass::kForward, {T, 4096, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "attn_proj", Pass::kDgrad, {T, 4096, 4096, 1}, Layout::kNN, 1);
  ExpectGemm(m, "attn_proj", Pass::kWgrad, {4096, 4096, T, 1}, Layout::kNT, 1);
  ExpectGemm(m, "mlp_up", Pass::kForward, {T, 16384, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "mlp_up", Pass::kDgrad, {T, 4096, 16384, 1}, Layout::kNN, 1);
  ExpectGemm(m, "mlp_up", Pass::kWgrad, {16384, 4096, T, 1}, Layout::kNT, 1);
  ExpectGemm(m, "mlp_down", Pass::kForward, {T, 4096, 16384, 1}, Layout::kTN, 1);
  ExpectGemm(m, "mlp_down", Pass::kDgrad, {T, 16384, 4096, 1}, Layout::kNN, 1);
  ExpectGemm(m, "mlp_down", Pass::kWgrad, {4096, 16384, T, 1}, Layout::kNT, 1);
  ExpectGemm(m, "logits", Pass::kForward, {T, 51200, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "logits", Pass::kDgrad, {T, 4096, 51200, 1}, Layout::kNN, 1);
  ExpectGemm(m, "logits", Pass::kWgrad, {51200, 4096, T, 1}, Layout::kNT, 1);
}

TEST(GemmTest, PaperLayerForwardFlopsMatchClosedForm) {
  // Per-layer forward FLOPs with a GELU MLP and a_kv = a: 24·b·s·h² + 4·b·s²·h.
  ModelSpec s = PaperLayer();
  double fwd = 0;
  for (const Gemm& g : BuildGemms(s)) {
    if (g.pass == Pass::kForward && g.name != "logits") fwd += g.step_flops();
  }
  const double b = 4, sl = 2048, h = 4096;
  EXPECT_DOUBLE_EQ(fwd, 24 * b * sl * h * h + 4 * b * sl * sl * h);
}

TEST(GemmTest, BackwardIsTwiceForward) {
  double fwd = 0, bwd = 0;
  for (const Gemm& g : BuildGemms(PaperLayer())) {
    (g.pass == Pass::kForward ? fwd : bwd) += g.step_flops();
  }
  EXPECT_DOUBLE_EQ(bwd, 2 * fwd);
}

TEST(GemmTest, GroupedQueryAttentionShrinksQkvOnly) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_kv_heads = 8;
  s.num_layers = 32;
  s.vocab_size = 128256;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 14336;
  s.attention = Attention::kUnfused;
  const auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  // (a + 2·a_kv)·d = (32 + 16)·128 = 6144
  ExpectGemm(m, "qkv", Pass::kForward, {2048, 6144, 4096, 1}, Layout::kTN, 32);
  // attention stays per query head: batch b·a = 32
  ExpectGemm(m, "attn_score", Pass::kForward, {2048, 2048, 128, 32}, Layout::kTN, 32);
  ExpectGemm(m, "attn_proj", Pass::kForward, {2048, 4096, 4096, 1}, Layout::kTN, 32);
}

TEST(GemmTest, SwigluFusedAndSeparateGateUp) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 2;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 11008;
  auto fused = ByName(BuildGemms(*NormalizeSpec(s)));
  ExpectGemm(fused, "mlp_gate_up", Pass::kForward, {2048, 22016, 4096, 1}, Layout::kTN, 2);
  ExpectGemm(fused, "mlp_down", Pass::kForward, {2048, 4096, 11008, 1}, Layout::kTN, 2);
  EXPECT_EQ(fused.count({"mlp_gate", Pass::kForward}), 0u);
  s.fused_gate_up = false;
  auto separate = ByName(BuildGemms(*NormalizeSpec(s)));
  ExpectGemm(separate, "mlp_gate", Pass::kForward, {2048, 11008, 4096, 1}, Layout::kTN, 2);
  ExpectGemm(separate, "mlp_up", Pass::kForward, {2048, 11008, 4096, 1}, Layout::kTN, 2);
  ExpectGemm(separate, "mlp_gate", Pass::kWgrad, {11008, 4096, 2048, 1}, Layout::kNT, 2);
}

// Mixtral-like MoE: a router GEMM, the experts as one grouped GEMM (batch = E) of T·k/E rows
// each, shared experts over every token; tensor parallelism splits each expert's width.
TEST(GemmTest, MixtureOfExpertsRouterGroupedExpertsAndSharedExperts) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_kv_heads = 8;
  s.num_layers = 2;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 14336;
  s.num_experts = 8;
  s.experts_per_token = 2;
  s.seq_length = 4096;
  s.tensor_parallel = 2;
  auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  // T = 4096 tokens; each expert sees 4096 · 2 / 8 = 1024 of them.
  ExpectGemm(m, "moe_router", Pass::kForward, {4096, 8, 4096, 1}, Layout::kTN, 2);
  ExpectGemm(m, "moe_gate_up", Pass::kForward, {1024, 14336, 4096, 8}, Layout::kTN, 2);
  ExpectGemm(m, "moe_down", Pass::kForward, {1024, 4096, 7168, 8}, Layout::kTN, 2);
  ExpectGemm(m, "moe_down", Pass::kWgrad, {4096, 7168, 1024, 8}, Layout::kNT, 2);
  EXPECT_EQ(m.count({"mlp_down", Pass::kForward}), 0u);
  EXPECT_EQ(m.count({"shared_down", Pass::kForward}), 0u);
  // The experts' FLOPs are k/E of all experts running every token.
  const double expert_flops = m.at({"moe_gate_up", Pass::kForward}).flops;
  EXPECT_DOUBLE_EQ(expert_flops, 2.0 * 4096 * 2 * (2 * 14336 / 2) * 4096);  // 2·T·k·(2f/t)·h
  s.shared_expert_ffn_hidden_size = 5632;
  auto shared = ByName(BuildGemms(*NormalizeSpec(s)));
  ExpectGemm(shared, "shared_gate_up", Pass::kForward, {4096, 5632, 4096, 1}, Layout::kTN, 2);
  ExpectGemm(shared, "shared_down", Pass::kForward, {4096, 4096, 2816, 1}, Layout::kTN, 2);
  // Nonsense is refused, naming the field.
  s.experts_per_token = 9;
  EXPECT_FALSE(NormalizeSpec(s).ok());
  s.num_experts = 0;
  s.experts_per_token = 2;
  auto refused = NormalizeSpec(s);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("num_experts"));
}

TEST(GemmTest, SwigluDefaultWidthIsEightThirdsRoundedUp) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_layers = 1;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  EXPECT_EQ(NormalizeSpec(s)->ffn_hidden_size, 10923);  // ceil(8·4096/3)
}

TEST(GemmTest, TensorParallelShardsEveryLinear) {
  ModelSpec s = PaperLayer();
  s.tensor_parallel = 2;
  const auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  ExpectGemm(m, "qkv", Pass::kForward, {8192, 6144, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "attn_score", Pass::kForward, {2048, 2048, 256, 32}, Layout::kTN, 1);
  ExpectGemm(m, "attn_proj", Pass::kForward, {8192, 4096, 2048, 1}, Layout::kTN, 1);
  ExpectGemm(m, "mlp_up", Pass::kForward, {8192, 8192, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "mlp_down", Pass::kForward, {8192, 4096, 8192, 1}, Layout::kTN, 1);
  ExpectGemm(m, "logits", Pass::kForward, {8192, 25600, 4096, 1}, Layout::kTN, 1);
}

TEST(GemmTest, TensorParallelBeyondKvHeadsReplicatesThem) {
  ModelSpec s;
  s.hidden_size = 8192;
  s.num_attention_heads = 64;
  s.num_kv_heads = 8;
  s.num_layers = 1;
  s.vocab_size = 32000;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 28672;
  s.tensor_parallel = 16;
  const auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  // 4 query heads and 1 (replicated) KV head per rank: (4 + 2)·128
  ExpectGemm(m, "qkv", Pass::kForward, {2048, 768, 8192, 1}, Layout::kTN, 1);
}

TEST(GemmTest, DecodeUsesOneTokenPerSequenceAndTheCache) {
  ModelSpec s;
  s.hidden_size = 4096;
  s.num_attention_heads = 32;
  s.num_kv_heads = 8;
  s.num_layers = 32;
  s.vocab_size = 128256;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 14336;
  s.micro_batch_size = 16;
  s.workload = Workload::kDecode;
  s.kv_cache_length = 4000;
  s.attention = Attention::kUnfused;
  const auto gemms = BuildGemms(*NormalizeSpec(s));
  const auto m = ByName(gemms);
  for (const Gemm& g : gemms) EXPECT_EQ(g.pass, Pass::kForward);
  ExpectGemm(m, "qkv", Pass::kForward, {16, 6144, 4096, 1}, Layout::kTN, 32);
  // Grouped-query decode: the 4 query heads of each of the 8 KV heads are one GEMM's rows, so the
  // cache is read once per KV head.
  ExpectGemm(m, "attn_score", Pass::kForward, {4, 4000, 128, 16 * 8}, Layout::kTN, 32);
  ExpectGemm(m, "attn_over_value", Pass::kForward, {4, 128, 4000, 16 * 8}, Layout::kNN, 32);
  ExpectGemm(m, "mlp_gate_up", Pass::kForward, {16, 28672, 4096, 1}, Layout::kTN, 32);
  ExpectGemm(m, "logits", Pass::kForward, {16, 128256, 4096, 1}, Layout::kTN, 1);
}

TEST(GemmTest, PrefillIsForwardOnlyWithLastPositionLogits) {
  ModelSpec s = PaperLayer();
  s.workload = Workload::kPrefill;
  const auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  EXPECT_EQ(m.size(), 7u);
  ExpectGemm(m, "qkv", Pass::kForward, {8192, 12288, 4096, 1}, Layout::kTN, 1);
  ExpectGemm(m, "logits", Pass::kForward, {4, 51200, 4096, 1}, Layout::kTN, 1);
}

TEST(GemmTest, FlashAttentionIsOneFusedEntryPerPass) {
  ModelSpec s = PaperLayer();
  s.attention = Attention::kFlash;
  const auto m = ByName(BuildGemms(*NormalizeSpec(s)));
  EXPECT_EQ(m.count({"attn_score", Pass::kForward}), 0u);
  const Gemm& fwd = m.at({"attn_fused", Pass::kForward});
  const Gemm& bwd = m.at({"attn_fused", Pass::kBackward});
  EXPECT_TRUE(fwd.fused_attention);
  EXPECT_EQ(fwd.shape, (GemmShape{2048, 2048, 256, 64}));
  // Forward = the two unfused GEMMs' FLOPs: 4·b·s²·h
  EXPECT_DOUBLE_EQ(fwd.flops, 4.0 * 4 * 2048.0 * 2048 * 4096);
  EXPECT_DOUBLE_EQ(bwd.flops, 2.5 * fwd.flops);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// Decode reads the KV cache of a_kv heads: Llama-3-8B (kv 4096, batch 64) attention is at least
// 3x faster with 8 KV heads than with 32, fused or not.
TEST(GemmTest, DecodeAttentionScalesWithKvHeads) {
  for (Attention attention : {Attention::kFlash, Attention::kUnfused}) {
    auto attention_time = [&](int64_t kv) {
      ModelSpec s;
      s.hidden_size = 4096;
      s.num_attention_heads = 32;
      s.num_kv_heads = kv;
      s.num_layers = 32;
      s.vocab_size = 128256;
      s.mlp = Mlp::kSwiglu;
      s.ffn_hidden_size = 14336;
      s.micro_batch_size = 64;
      s.workload = Workload::kDecode;
      s.kv_cache_length = 4096;
      s.attention = attention;
      double t = 0;
      for (const Gemm& g : BuildGemms(*NormalizeSpec(s))) {
        if (absl::StartsWith(g.name, "attn_") && g.name != "attn_proj") {
          t += Predict(**FindGpu("h100-sxm"), g).time_s * static_cast<double>(g.count);
        }
      }
      return t;
    };
    EXPECT_GE(attention_time(32) / attention_time(8), 3.0);
    EXPECT_GT(attention_time(8), attention_time(1));
  }
}

// DeepSeek-V3's attention, one rank of t = 8: the query's down and up projections, the keys'
// and values' down projection (the latent and the rotary key) and up projection per head, the
// output projection from the value heads; the down projections run whole on every rank.
TEST(GemmTest, MultiHeadLatentAttentionProjectsThroughItsLatents) {
  ModelSpec s;
  s.hidden_size = 7168;
  s.num_attention_heads = 128;
  s.head_dim = 192;
  s.qk_rope_head_dim = 64;
  s.v_head_dim = 128;
  s.kv_lora_rank = 512;
  s.q_lora_rank = 1536;
  s.num_layers = 4;
  s.ffn_hidden_size = 18432;
  s.mlp = Mlp::kSwiglu;
  s.vocab_size = 129280;
  s.seq_length = 4096;
  s.tensor_parallel = 8;
  s = *NormalizeSpec(s);
  const auto m = ByName(BuildGemms(s));
  const int64_t T = 4096;
  ExpectGemm(m, std::string(kMlaQDown), Pass::kForward, {T, 1536, 7168, 1}, Layout::kTN, 4);
  ExpectGemm(m, std::string(kMlaQUp), Pass::kForward, {T, 16 * 192, 1536, 1}, Layout::kTN, 4);
  ExpectGemm(m, std::string(kMlaKvDown), Pass::kForward, {T, 512 + 64, 7168, 1}, Layout::kTN, 4);
  ExpectGemm(m, std::string(kMlaKvUp), Pass::kForward, {T, 16 * (128 + 128), 512, 1}, Layout::kTN,
             4);
  ExpectGemm(m, std::string(kAttnProj), Pass::kForward, {T, 7168, 16 * 128, 1}, Layout::kTN, 4);
  EXPECT_EQ(m.count({std::string(kQkv), Pass::kForward}), 0u);
  // The fused kernel's FLOPs weigh Q·Kᵀ by d = 192 and P·V by d_v = 128: forward 2·s²·(d + d_v).
  const Gemm& fwd = m.at({std::string(kAttnFused), Pass::kForward});
  EXPECT_EQ(fwd.shape, (GemmShape{T, T, 192, 16}));
  EXPECT_DOUBLE_EQ(fwd.flops, 2.0 * T * T * (192 + 128) * 16);
  const Gemm& bwd = m.at({std::string(kAttnFused), Pass::kBackward});
  EXPECT_DOUBLE_EQ(bwd.flops, 2.0 * T * T * (3 * 192 + 2 * 128) * 16);
  // No q_lora_rank: one full query projection.
  s.q_lora_rank = 0;
  const auto full = ByName(BuildGemms(*NormalizeSpec(s)));
  ExpectGemm(full, std::string(kMlaQ), Pass::kForward, {T, 16 * 192, 7168, 1}, Layout::kTN, 4);
  EXPECT_EQ(full.count({std::string(kMlaQDown), Pass::kForward}), 0u);
}

// DeepSeek-style: the first layers dense of their own width, the rest MoE; Llama 4 Maverick
// style: every second layer MoE. Each GEMM runs as many times as its layers.
TEST(GemmTest, DenseAndMoeLayersMixByCount) {
  ModelSpec s;
  s.hidden_size = 2048;
  s.num_attention_heads = 16;
  s.num_layers = 10;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 1408;
  s.dense_ffn_hidden_size = 10944;
  s.num_experts = 64;
  s.experts_per_token = 6;
  s.first_dense_layers = 1;
  s.vocab_size = 102400;
  s.seq_length = 1024;
  s = *NormalizeSpec(s);
  auto m = ByName(BuildGemms(s));
  EXPECT_EQ(m.at({std::string(kMlpGateUp), Pass::kForward}).count, 1);
  EXPECT_EQ(m.at({std::string(kMlpGateUp), Pass::kForward}).shape.n, 2 * 10944);
  EXPECT_EQ(m.at({std::string(kMoeGateUp), Pass::kForward}).count, 9);
  EXPECT_EQ(m.at({std::string(kMoeRouter), Pass::kForward}).count, 9);
  EXPECT_EQ(m.at({std::string(kQkv), Pass::kForward}).count, 10);
  s.first_dense_layers = 0;
  s.moe_layer_interval = 2;
  m = ByName(BuildGemms(*NormalizeSpec(s)));
  EXPECT_EQ(m.at({std::string(kMlpDown), Pass::kForward}).count, 5);
  EXPECT_EQ(m.at({std::string(kMoeDown), Pass::kForward}).count, 5);
  // An interval that leaves no MoE layer, and the fields on a dense model, are refused by name.
  s.first_dense_layers = 9;
  s.moe_layer_interval = 2;
  EXPECT_THAT(NormalizeSpec(s).status().message(), ::testing::HasSubstr("moe_layer_interval"));
  ModelSpec dense = s;
  dense.num_experts = 0;
  dense.experts_per_token = 0;
  EXPECT_THAT(NormalizeSpec(dense).status().message(), ::testing::HasSubstr("first_dense_layers"));
}

// Local attention: the windowed layers' fused kernels visit only the window's key blocks, so
// they cost far less than full attention at a long sequence; FLOPs count 2·window keys (the
// causal convention); unfused attention computes every score either way.
TEST(GemmTest, SlidingWindowLayersVisitOnlyTheWindow) {
  ModelSpec s;
  s.hidden_size = 2560;
  s.num_attention_heads = 8;
  s.num_kv_heads = 4;
  s.head_dim = 256;
  s.num_layers = 12;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 10240;
  s.vocab_size = 262208;
  s.seq_length = 16384;
  s.sliding_window = 1024;
  s.sliding_window_layers = 10;
  s = *NormalizeSpec(s);
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  double local_s = 0, global_s = 0;
  int entries = 0;
  for (const Gemm& g : BuildGemms(s)) {
    if (!g.fused_attention || g.pass != Pass::kForward) continue;
    ++entries;
    if (g.window > 0) {
      EXPECT_EQ(g.count, 10);
      EXPECT_EQ(g.shape.n, 2048);
      local_s = PredictFusedAttention(gpu, g).time_s;
    } else {
      EXPECT_EQ(g.count, 2);
      EXPECT_EQ(g.shape.n, 16384);
      global_s = PredictFusedAttention(gpu, g).time_s;
    }
  }
  EXPECT_EQ(entries, 2);
  // About (window + 128) / (s / 2) of the blocks: 1152 / 8192.
  EXPECT_GT(local_s / global_s, 0.10);
  EXPECT_LT(local_s / global_s, 0.20);
  // A window as long as the sequence changes nothing.
  s.sliding_window = 16384;
  int windowed = 0;
  for (const Gemm& g : BuildGemms(s)) windowed += g.window > 0;
  EXPECT_EQ(windowed, 0);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// FP8 as Transformer Engine runs it by default: the linear layers in FP8, attention's core and the
// output layer in BF16 (issue 36: FP8 had priced attention at FP8 rates).
TEST(GemmTest, Fp8RunsLinearLayersInFp8AndAttentionAndLogitsInBf16) {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 2, 14336, 128256);
  s.dtype = DType::kFp8E4M3;
  for (Attention att : {Attention::kFlash, Attention::kUnfused}) {
    s.attention = att;
    int fp8 = 0, bf16 = 0;
    for (const Gemm& g : BuildGemms(*NormalizeSpec(s))) {
      const bool core = g.name == kAttnFused || g.name == kAttnScore || g.name == kAttnOverValue ||
                        g.name == kLogits;
      EXPECT_EQ(g.dtype, core ? DType::kBf16 : DType::kFp8E4M3) << g.name;
      ++(g.dtype == DType::kBf16 ? bf16 : fp8);
    }
    EXPECT_GT(fp8, 0);
    EXPECT_GT(bf16, 0);
  }
}

}  // namespace
}  // namespace wavecrest
