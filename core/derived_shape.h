// The sizes a normalized ModelSpec implies (core/derived_shape.cc): per tensor-parallel rank,
// per expert under the routing the spec describes, and its local/global attention pattern.
// core/model_spec.h includes this header, so a spec's users see them with it.
#ifndef WAVECREST_CORE_DERIVED_SHAPE_H_
#define WAVECREST_CORE_DERIVED_SHAPE_H_

#include <cstdint>

namespace wavecrest {

struct ModelSpec;  // core/model_spec.h

// Derived sizes of a normalized spec, per tensor-parallel rank where it says so.
struct DerivedShape {
  int64_t head_dim;           // d
  int64_t q_width;            // a·d
  int64_t kv_width;           // a_kv·d
  int64_t heads_per_rank;     // a/t
  int64_t kv_heads_per_rank;  // max(a_kv/t, 1): KV heads are replicated when t > a_kv
  int64_t ffn_per_rank;       // f/t
  int64_t vocab_per_rank;     // ceil(v/t)
  int64_t tokens;        // rows of every linear GEMM this step: b·s/c (training, prefill) or b
  int64_t seq_per_rank;  // s/c: the queries (and keys per ring step) of one rank's attention
  // MoE: rows of each of this rank's expert GEMMs, ceil(tokens·k·e / E) (the tokens of the e
  // expert-parallel ranks routed to it), times the capacity factor when there is one (padded);
  // 0 = dense
  int64_t expert_tokens;
  int64_t expert_tokens_routed;  // MoE: the same without capacity padding (the useful rows)
  double expert_padding;         // expert_tokens / expert_tokens_routed (1 dropless)
  int64_t experts_per_rank;      // MoE: E / e
  // MoE: the experts whose GEMMs run this step on a rank and their rows summed. Training: all
  // E/e, expert_tokens rows each. Dropless prefill and decode: the experts the rank's T·k routed
  // copies touch, E/e·(1 − (1 − k/E)^(T·e)) under uniform routing, rounded (at least 1), sharing
  // the copies as evenly as whole rows allow (expert_tokens = the larger share).
  int64_t experts_run;
  int64_t expert_rows_total;
  int64_t expert_ffn_per_rank;  // MoE: an expert's width on a rank, f / expert_tensor_parallel
  int64_t shared_ffn_per_rank;  // MoE: shared experts' width / t
  // The MLP width one token passes through, per rank: f/t dense; (k·f·padding + shared)/t for
  // MoE.
  int64_t active_ffn_per_rank;
  int64_t moe_layers;          // layers with a mixture of experts (0 for a dense model)
  int64_t dense_layers;        // layers with a dense MLP: num_layers − moe_layers
  int64_t dense_ffn_per_rank;  // their MLP width per rank
  int64_t v_head_dim;          // the value head dim (head_dim but under MLA)
  int64_t window_layers;       // layers with local attention (sliding_window > 0)
  // A hybrid model's layers by kind (hybrid_pattern); a transformer's every layer has attention
  // and an MLP (attention_layers = num_layers, mamba_layers 0).
  int64_t attention_layers;
  int64_t mamba_layers;
  // The blocks (pre-norm + residual) of one layer on average: 2 in a transformer (attention and
  // MLP), 1 in a hybrid model (each layer one block).
  double blocks_per_layer;
  // Mamba-2 mixers, per tensor-parallel rank: heads H/t, groups G/t, d_inner/t = H·P/t, the
  // in_proj's outputs (z, x, B, C, dt: 2·d_inner/t + 2·(G/t)·N + H/t) and the conv1d's channels
  // (x, B, C: d_inner/t + 2·(G/t)·N).
  int64_t mamba_heads_per_rank;
  int64_t mamba_groups_per_rank;
  int64_t mamba_inner_per_rank;
  int64_t mamba_in_proj_per_rank;
  int64_t mamba_conv_per_rank;
};
DerivedShape Derive(const ModelSpec& spec);

// Whether routing is group-limited: more than one group of experts, each token's experts within
// fewer than all of them (expert_groups_per_token 0 or equal to expert_groups limits nothing).
bool GroupLimitedRouting(const ModelSpec& spec);

// The experts' tensor-parallel degree: expert_tensor_parallel, or tensor_parallel when it is 0.
int64_t ExpertTensorParallel(const ModelSpec& spec);

// The MLP width of a dense layer: dense_ffn_hidden_size in a model that mixes dense and MoE
// layers (0 there = ffn_hidden_size), ffn_hidden_size in a dense model.
int64_t DenseFfnWidth(const ModelSpec& spec);

// The period of a local/global attention pattern: the smallest P ≥ 2 such that `layers` layers,
// every P-th of them global (the last of its group, as Gemma 2 and 3 and GPT-OSS lay them out),
// have `local` local ones (layers − layers/P); 0 when no period gives that many (or every layer,
// or none, is local).
int64_t LocalLayerPeriod(int64_t layers, int64_t local);

// The local layers of `layers` layers in the pattern `base_local` of `base_layers` has: its
// period kept (Gemma 3's five local in six, GPT-OSS's alternation), all of them when all were,
// else the same share (rounded, at least one).
int64_t LocalLayersFor(int64_t layers, int64_t base_layers, int64_t base_local);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_DERIVED_SHAPE_H_
