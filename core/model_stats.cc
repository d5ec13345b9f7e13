#include "core/model_stats.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/attention_cost.h"

namespace wavecrest {

namespace {

// Attention of one layer: the projections (MLA's down and up projections and their norms, or
// QKV), the output projection, and their biases.
int64_t AttentionParams(const ModelSpec& s) {
  const int64_t h = s.hidden_size;
  const int64_t a = s.num_attention_heads;
  const int64_t q = a * s.head_dim;
  if (s.kv_lora_rank > 0) {
    const int64_t nope = s.head_dim - s.qk_rope_head_dim;
  const int64_t v_dim = Derive(s).v_head_dim;
    int64_t p = s.q_lora_rank > 0 ? h * s.q_lora_rank + s.q_lora_rank /* its norm */ +
                                        s.q_lora_rank * q
                                  : h * q;
    p += h * (s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank /* its norm */;
    p += s.kv_lora_rank * a * (nope + v_dim);
    p += a * v_dim * h;
    return p;
  }
  const int64_t kv = s.num_kv_heads * s.head_dim;
  int64_t p = h * (q + 2 * kv) + q * h;  // QKV and output projection
  if (s.bias == Bias::kQkv || s.bias == Bias::kAll) p += q + 2 * kv;
  if (s.bias == Bias::kAll) p += h;
  return p;
}

// One Mamba-2 mixer (Megatron-Core's MambaMixer): in_proj, the depthwise conv1d with its bias,
// dt's bias, A and D per head, the gated RMSNorm's scale and out_proj.
int64_t MambaParams(const ModelSpec& s) {
  const int64_t h = s.hidden_size, H = s.mamba_heads;
  const int64_t inner = H * s.mamba_head_dim;
  const int64_t conv = inner + 2 * s.mamba_groups * s.mamba_state_dim;
  return h * (inner + conv + H) + conv * (s.mamba_conv_kernel + 1) + 3 * H + inner + inner * h;
}

}  // namespace

ParamCounts CountParams(const ModelSpec& s) {
  const int64_t h = s.hidden_size;
  const DerivedShape d = Derive(s);
  // One MLP (or expert) of width `width`, with its biases.
  auto mlp_of = [&](int64_t width) {
    int64_t p = (s.mlp == Mlp::kGelu ? 2 : 3) * h * width;
    if (s.bias == Bias::kAll) p += (s.mlp == Mlp::kGelu ? width : 2 * width) + h;
    return p;
  };
  const int64_t dense_mlp = mlp_of(DenseFfnWidth(s));
  int64_t moe_mlp = 0, moe_active = 0;
  if (s.num_experts > 0) {
    int64_t always = h * s.num_experts;  // the router
    if (s.bias == Bias::kAll) always += s.num_experts;
    if (s.shared_expert_ffn_hidden_size > 0) always += mlp_of(s.shared_expert_ffn_hidden_size);
    if (s.shared_expert_gate) always += h;
    moe_mlp = s.num_experts * mlp_of(s.ffn_hidden_size) + always;
    moe_active = s.experts_per_token * mlp_of(s.ffn_hidden_size) + always;
  }
  const int64_t norm_params = s.norm == Norm::kLayerNorm ? 2 * h : h;  // weight (+ bias)
  const int64_t layer_base = AttentionParams(s) + 2 * norm_params;
  // A hybrid model's layers are one block each, with its own norm.
  const int64_t layers =
      IsHybrid(s) ? (AttentionParams(s) + norm_params) * d.attention_layers +
                        (MambaParams(s) + norm_params) * d.mamba_layers +
                        (dense_mlp + norm_params) * d.dense_layers +
                        (moe_mlp + norm_params) * d.moe_layers
                  : (layer_base + dense_mlp) * d.dense_layers + (layer_base + moe_mlp) * d.moe_layers;

  int64_t embedding = s.vocab_size * h + s.learned_position_embeddings * h;
  if (!s.tied_embeddings) embedding += s.vocab_size * h;

  ParamCounts c;
  c.per_layer_params = s.num_layers > 0 ? layers / s.num_layers : 0;  // the mean of mixed layers
  c.embedding_params = embedding;
  c.total_params = layers + embedding + norm_params /* final norm */;
  c.non_embedding_params = c.total_params - embedding;
  c.active_params = c.total_params - (moe_mlp - moe_active) * d.moe_layers;
  c.expert_params = s.num_experts * mlp_of(s.ffn_hidden_size) * d.moe_layers;
  return c;
}

absl::StatusOr<FlopCount> ParseFlopCount(absl::string_view name) {
  if (name.empty() || name == "full") return FlopCount::kFull;
  if (name == "causal") return FlopCount::kCausal;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown value \"", name,
                   "\"; allowed: full (the default: attention's whole s² product), causal (half "
                   "of it, as Megatron-Core counts a causal mask)"));
}

absl::string_view FlopCountName(FlopCount c) {
  return c == FlopCount::kCausal ? "causal" : "full";
}

FlopCounts CountFlops(const ModelSpec& spec, const std::vector<Gemm>& gemms) {
  FlopCounts c;
  // The experts' padding to their capacity is work done, not the model's.
  const double padding = Derive(spec).expert_padding;
  const bool training = spec.workload == Workload::kTraining;
  // A causal mask halves the s × s products of training and prefill, not decode's one row.
  const double causal = spec.workload == Workload::kDecode ? 1.0 : 0.5;
  double full = 0, halved = 0;
  for (const Gemm& g : gemms) {
    // The kernels' own work: a fused attention computes only the blocks its mask leaves.
    const double work = g.step_flops() * FusedAttentionWorkShare(g);
    c.step_flops += work;
    if (g.pass == Pass::kForward) c.forward_flops += work;
    const bool expert = IsRoutedExpertGemm(g.name);
    const bool scores = g.name == kAttnScore || g.name == kAttnOverValue;
    double model = expert ? g.step_flops() / padding : g.step_flops();
    if (g.fused_attention) {
      // The model's attention is the forward's two products and twice them backward; the fused
      // backward's own count (five products, one recomputing the scores) is the kernel's work.
      model = g.pass == Pass::kForward ? g.step_flops() * (training ? 3 : 1) : 0;
    }
    full += model;
    halved += g.fused_attention || scores ? causal * model : model;
  }
  // The model's FLOPs for one micro-batch: every tensor- and context-parallel rank's share.
  const double ranks = static_cast<double>(spec.tensor_parallel) *
                       static_cast<double>(std::max<int64_t>(spec.context_parallel, 1));
  c.model_flops = full * ranks;
  c.causal_model_flops = halved * ranks;
  c.tokens_per_step = Derive(spec).tokens;
  return c;
}

}  // namespace wavecrest
