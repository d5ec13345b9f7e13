#include "core/model_stats.h"

namespace wavecrest {

ParamCounts CountParams(const ModelSpec& s) {
  const int64_t h = s.hidden_size;
  const int64_t q = s.num_attention_heads * s.head_dim;
  const int64_t kv = s.num_kv_heads * s.head_dim;
  const int64_t f = s.ffn_hidden_size;

  int64_t attn = h * (q + 2 * kv) + q * h;  // QKV and output projection
  // One MLP (or expert) of width `width`, with its biases.
  auto mlp_of = [&](int64_t width) {
    int64_t p = (s.mlp == Mlp::kGelu ? 2 : 3) * h * width;
    if (s.bias == Bias::kAll) p += (s.mlp == Mlp::kGelu ? width : 2 * width) + h;
    return p;
  };
  int64_t mlp = mlp_of(f);
  int64_t active_mlp = mlp;
  if (s.num_experts > 0) {
    int64_t always = h * s.num_experts;  // the router
    if (s.shared_expert_ffn_hidden_size > 0) always += mlp_of(s.shared_expert_ffn_hidden_size);
    if (s.shared_expert_gate) always += h;
    mlp = s.num_experts * mlp_of(f) + always;
    active_mlp = s.experts_per_token * mlp_of(f) + always;
  }
  if (s.bias == Bias::kQkv || s.bias == Bias::kAll) attn += q + 2 * kv;
  if (s.bias == Bias::kAll) attn += h;
  const int64_t norm_params = s.norm == Norm::kLayerNorm ? 2 * h : h;  // weight (+ bias)
  const int64_t per_layer = attn + mlp + 2 * norm_params;

  int64_t embedding = s.vocab_size * h + s.learned_position_embeddings * h;
  if (!s.tied_embeddings) embedding += s.vocab_size * h;

  ParamCounts c;
  c.per_layer_params = per_layer;
  c.embedding_params = embedding;
  c.total_params = per_layer * s.num_layers + embedding + norm_params /* final norm */;
  c.non_embedding_params = c.total_params - embedding;
  c.active_params = c.total_params - (mlp - active_mlp) * s.num_layers;
  return c;
}

FlopCounts CountFlops(const ModelSpec& spec, const std::vector<Gemm>& gemms) {
  FlopCounts c;
  for (const Gemm& g : gemms) {
    c.step_flops += g.step_flops();
    if (g.pass == Pass::kForward) c.forward_flops += g.step_flops();
  }
  c.model_flops = c.step_flops * static_cast<double>(spec.tensor_parallel);
  c.tokens_per_step = Derive(spec).tokens;
  return c;
}

}  // namespace wavecrest
