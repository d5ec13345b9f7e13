// Attention as models use it, as layer programs (core/layer_program_attention.cc): multi-head
// latent attention, sliding-window attention, context parallelism's ring steps, checked against
// FLOPs and bytes computed by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/layer_emulation.h"
#include "core/layer_program.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

const LayerOp* FindOp(const LayerProgram& p, absl::string_view name) {
  for (const LayerOp& op : p.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double GemmFlopsOf(const LayerProgram& p, absl::string_view name) {
  const LayerOp* op = FindOp(p, name);
  return op != nullptr ? GemmFlops(op->gemm.shape) : -1;
}

// DeepSeek-V2-Lite's attention shrunk: h 256, 4 heads of q/k dim 48 (32 + rotary 16) and v dim
// 32, a KV latent of 64, a query latent of 96; 128 tokens.
constexpr int64_t kHidden = 256, kHeads = 4, kDq = 48, kRope = 16, kDv = 32, kKv = 64, kQ = 96;
constexpr int64_t kTokens = 128;

ModelSpec Mla(int64_t q_lora) {
  ModelSpec s;
  s.hidden_size = kHidden;
  s.num_attention_heads = kHeads;
  s.head_dim = kDq;
  s.num_layers = 2;
  s.vocab_size = 100;
  s.seq_length = kTokens;
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  s.ffn_hidden_size = 512;
  s.kv_lora_rank = kKv;
  s.q_lora_rank = q_lora;
  s.qk_rope_head_dim = kRope;
  s.v_head_dim = kDv;
  return *NormalizeSpec(s);
}

TEST(MlaProgram, ProjectionsAndAttentionByHand) {
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, Mla(kQ));
  EXPECT_THAT(LayerKeyString(key), HasSubstr("mla q96 kv64 rope16 dv32"));
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  ASSERT_TRUE(p.ok()) << p.status();
  const int64_t nope = kDq - kRope;
  EXPECT_EQ(GemmFlopsOf(*p, "mla_q_down forward"), 2.0 * kTokens * kQ * kHidden);
  EXPECT_EQ(GemmFlopsOf(*p, "mla_q_up forward"), 2.0 * kTokens * kHeads * kDq * kQ);
  EXPECT_EQ(GemmFlopsOf(*p, "mla_kv_down forward"), 2.0 * kTokens * (kKv + kRope) * kHidden);
  EXPECT_EQ(GemmFlopsOf(*p, "mla_kv_up forward"), 2.0 * kTokens * kHeads * (nope + kDv) * kKv);
  EXPECT_EQ(GemmFlopsOf(*p, "attn_proj forward"), 2.0 * kTokens * kHidden * kHeads * kDv);
  // The latent's RMSNorm reads its 64 columns out of rows of 64 + 16.
  const LayerOp* norm = FindOp(*p, "kv latent norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_TRUE(norm->rms);
  EXPECT_EQ(norm->cols, kKv);
  EXPECT_EQ(norm->x_stride, kKv + kRope);
  // Assembly: reads q (H·dq), the up projection (H·(nope + dv)) and the down rows (kv + rope);
  // writes QKV rows of H·(2·dq + dv), bf16.
  const LayerOp* as = FindOp(*p, "mla assemble q k v");
  ASSERT_NE(as, nullptr);
  EXPECT_EQ(LayerOpBytes(*p, *as),
            2.0 * kTokens *
                (kHeads * kDq + kHeads * (nope + kDv) + (kKv + kRope) + kHeads * (2 * kDq + kDv)));
  // The fused attention: query/key dim 48, value dim 32; FLOPs 2·s²·(dq + dv) per head forward,
  // 2·s²·(3·dq + 2·dv) backward (the full-product convention).
  const LayerOp* fwd = FindOp(*p, "attention forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->head_dim, kDq);
  EXPECT_EQ(fwd->v_head_dim, kDv);
  EXPECT_EQ(FusedAttentionGemm(*fwd, DType::kBf16).flops,
            2.0 * kTokens * kTokens * (kDq + kDv) * kHeads);
  const LayerOp* bwd = FindOp(*p, "attention backward");
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(FusedAttentionGemm(*bwd, DType::kBf16).flops,
            2.0 * kTokens * kTokens * (3 * kDq + 2 * kDv) * kHeads);
  // The program's GEMMs and attention are the planner's, FLOP for FLOP.
  const LayerEmulation e = EmulateLayerProgram(**FindGpu("h100-sxm"), key, *p);
  EXPECT_DOUBLE_EQ(e.flops, LayerFlops(key));
}

TEST(MlaProgram, FullQueryProjectionAndAttentionKey) {
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, Mla(0));
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(GemmFlopsOf(*p, "mla_q forward"), 2.0 * kTokens * kHeads * kDq * kHidden);
  EXPECT_EQ(FindOp(*p, "mla_q_down forward"), nullptr);
  // The attention key sees only the head dims: two models with other latents share it.
  ModelSpec other = Mla(0);
  other.kv_lora_rank = 128;
  other = *NormalizeSpec(other);
  const LayerKey a = *MakeLayerKey(LayerKind::kFusedAttention, Mla(0));
  EXPECT_EQ(a, *MakeLayerKey(LayerKind::kFusedAttention, other));
  EXPECT_THAT(LayerKeyString(a), HasSubstr("d48 causal mla dv32"));
  EXPECT_EQ(*MakeLayerKey(a.kind, a.layer), a);  // a key's own spec gives it back
}

ModelSpec Local(int64_t seq, int64_t window, int64_t window_layers, Workload w) {
  ModelSpec s;
  s.hidden_size = 1024;
  s.num_attention_heads = 8;
  s.num_kv_heads = 4;
  s.num_layers = 12;
  s.vocab_size = 1000;
  s.seq_length = seq;
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  s.workload = w;
  s.sliding_window = window;
  s.sliding_window_layers = window_layers;
  return *NormalizeSpec(s);
}

TEST(SlidingWindowProgram, WindowedAttentionByHand) {
  const ModelSpec m = Local(4096, 1024, 0, Workload::kTraining);
  const LayerKey key = *MakeLayerKey(LayerKind::kFusedAttention, m);
  EXPECT_THAT(LayerKeyString(key), HasSubstr("causal window1024"));
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  ASSERT_TRUE(p.ok());
  const LayerOp* fwd = FindOp(*p, "attention forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->window, 1024);
  EXPECT_TRUE(fwd->causal);
  // The FLOP convention: a causal window counts s × min(s, 2w) = 4096 × 2048 per head.
  const Gemm g = FusedAttentionGemm(*fwd, DType::kBf16);
  EXPECT_EQ(g.shape, (GemmShape{4096, 2048, 128, 8}));
  EXPECT_EQ(g.flops, 2.0 * 2 * 4096 * 2048 * 128 * 8);
  EXPECT_EQ(g.window, 1024);
  // And the planner's fused attention of the same layer is the same kernel.
  for (const Gemm& planner : LayerGemms(key)) {
    if (planner.pass != Pass::kForward) continue;
    EXPECT_EQ(planner.shape, g.shape);
    EXPECT_EQ(planner.window, g.window);
    EXPECT_EQ(planner.flops, g.flops);
  }
  // Unfused: every score computed, the window masked in the softmax.
  ModelSpec unfused = m;
  unfused.attention = Attention::kUnfused;
  absl::StatusOr<LayerProgram> u =
      PlanLayerProgram(*MakeLayerKey(LayerKind::kUnfusedAttention, unfused));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(FindOp(*u, "softmax")->window, 1024);
  EXPECT_EQ(GemmFlopsOf(*u, "attn_score forward"), 2.0 * 4096 * 4096 * 128 * 8);
}

TEST(SlidingWindowProgram, AWindowCoveringEveryKeyIsGlobalAndDecodeReadsTheWindow) {
  // s 2048 under a 4096 window: the layer is global, its key the global one.
  EXPECT_EQ(*MakeLayerKey(LayerKind::kTransformerLayer, Local(2048, 4096, 0, Workload::kTraining)),
            *MakeLayerKey(LayerKind::kTransformerLayer, Local(2048, 0, 0, Workload::kTraining)));
  // Decode against 8192 cached tokens with a 1024 window: the cache holds the window.
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(
      *MakeLayerKey(LayerKind::kFusedAttention, Local(8192, 1024, 0, Workload::kDecode)));
  ASSERT_TRUE(p.ok());
  const LayerOp* fwd = FindOp(*p, "attention forward");
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->kv_len, 1024);
  EXPECT_EQ(fwd->window, 0);
  EXPECT_FALSE(fwd->causal);
}

// A local/global stack (Gemma 2/3, GPT-OSS): each kind of layer once, with its count; the stack's
// FLOPs are the model's per-layer FLOPs.
TEST(LocalGlobalStack, EachKindWithItsLayersSumsToTheModel) {
  const ModelSpec m = Local(4096, 512, 10, Workload::kTraining);  // 10 local, 2 global
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(m);
  ASSERT_TRUE(stack.ok()) << stack.status();
  ASSERT_EQ(stack->size(), 4u);
  EXPECT_EQ((*stack)[0].role, "local");
  EXPECT_EQ((*stack)[0].layers, 10);
  EXPECT_EQ((*stack)[0].key.layer.sliding_window, 512);
  EXPECT_EQ((*stack)[1].role, "global");
  EXPECT_EQ((*stack)[1].layers, 2);
  EXPECT_EQ((*stack)[1].key.layer.sliding_window, 0);
  double stack_flops = 0;
  for (const LayerUse& u : *stack) {
    ASSERT_TRUE(PlanLayerProgram(u.key).ok()) << LayerKeyString(u.key);
    if (u.key.kind == LayerKind::kTransformerLayer) stack_flops += u.layers * LayerFlops(u.key);
  }
  double model_flops = 0;
  for (const Gemm& g : BuildGemms(m)) model_flops += g.name == kLogits ? 0 : g.step_flops();
  EXPECT_NEAR(stack_flops, model_flops, 1e-9 * model_flops);
  // One key cannot stand for every layer of it.
  EXPECT_EQ(MakeLayerKey(LayerKind::kTransformerLayer, m).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ContextParallelProgram, RingStepsAreTheRanksBlocks) {
  ModelSpec s = Local(8192, 0, 0, Workload::kTraining);
  s.context_parallel = 4;
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, *NormalizeSpec(s));
  EXPECT_THAT(LayerKeyString(key), HasSubstr(" cp4"));
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  ASSERT_TRUE(p.ok());
  int forward = 0, backward = 0;
  for (const LayerOp& op : p->ops) {
    if (op.kind == LayerOpKind::kFusedAttention) {
      ++forward;
      EXPECT_EQ(op.q_len, 2048);  // s/c queries against s/c keys per step
      EXPECT_EQ(op.kv_len, 2048);
    }
    backward += op.kind == LayerOpKind::kFusedAttentionBackward ? 1 : 0;
  }
  EXPECT_EQ(forward, 4);
  EXPECT_EQ(backward, 4);
  EXPECT_EQ(GemmFlopsOf(*p, "qkv forward"), 2.0 * 2048 * (8 + 2 * 4) * 128 * 1024);
  // Same FLOPs as the planner's c blocks.
  EXPECT_DOUBLE_EQ(EmulateLayerProgram(**FindGpu("h100-sxm"), key, *p).flops, LayerFlops(key));
}

}  // namespace
}  // namespace wavecrest
