// Derive() and the other sizes a spec implies (core/derived_shape.h): per-rank widths, the expert
// GEMMs' rows under the spec's routing, and the local/global attention pattern.
#include "core/derived_shape.h"

#include <algorithm>
#include <cmath>

#include "core/model_spec.h"

namespace wavecrest {

bool GroupLimitedRouting(const ModelSpec& s) {
  return s.expert_groups > 1 && s.expert_groups_per_token > 0 &&
         s.expert_groups_per_token < s.expert_groups;
}

int64_t ExpertTensorParallel(const ModelSpec& s) {
  return s.expert_tensor_parallel > 0 ? s.expert_tensor_parallel
                                      : std::max<int64_t>(s.tensor_parallel, 1);
}

int64_t DenseFfnWidth(const ModelSpec& s) {
  return s.num_experts > 0 && s.dense_ffn_hidden_size > 0 ? s.dense_ffn_hidden_size
                                                          : s.ffn_hidden_size;
}

namespace {

// The expert GEMMs of one MoE layer on one rank (DerivedShape's expert_* fields).
//
// Training: each token goes to k experts, E expert GEMMs of ceil(T·k/E) rows each, the balanced
// routing a load-balancing loss aims at (a grouped GEMM). Under expert parallelism a rank runs E/e
// of them on the tokens of e ranks: ceil(T·k·e/E) rows each. Whole experts (expert_tensor_parallel
// 1) under tensor parallelism: each of the t ranks routes its own T/t tokens (the
// sequence-parallel split) to experts of full width. A capacity factor C pads every expert to C
// times its balanced share; dropless routing with a skew σ (moe_routing_skew) prices every rank
// at the busiest expert-parallel rank's rows, min(σ, e) times the mean (the others wait for it).
//
// Prefill and decode, dropless: an expert runs only when a token is routed to it. The rank's
// T·k routed copies (T of its own tokens, or T·e over e expert-parallel ranks of which 1/e are its
// experts') touch E/e·(1 − (1 − k/E)^(T·e)) of its E/e experts in expectation under uniform
// routing (rounded, at least one), and only their weights are read; they share the copies as
// evenly as whole rows allow (expert_rows_total over experts_run). With a capacity factor every
// expert is padded to its capacity and runs, as a padded kernel does.
void DeriveExperts(const ModelSpec& s, DerivedShape& d) {
  const int64_t t = s.tensor_parallel;
  const int64_t e = std::max<int64_t>(s.expert_parallel, 1);
  const int64_t et = ExpertTensorParallel(s);
  const int64_t routed = et == t ? d.tokens : (d.tokens + t - 1) / t;
  const int64_t E = s.num_experts, k = s.experts_per_token;
  d.experts_per_rank = E / e;
  d.expert_ffn_per_rank = s.ffn_hidden_size / et;
  const int64_t copies = routed * k * e;  // the e ranks' routed copies
  d.expert_tokens_routed = (copies + E - 1) / E;
  const double balanced = static_cast<double>(copies) / static_cast<double>(E);
  const double skew = std::min(std::max(s.moe_routing_skew, 1.0), static_cast<double>(e));
  const double factor = s.moe_capacity_factor > 0 ? s.moe_capacity_factor : skew;
  d.expert_tokens = factor == 1
                        ? d.expert_tokens_routed
                        : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(factor * balanced)));
  d.expert_padding = static_cast<double>(d.expert_tokens) /
                     static_cast<double>(std::max<int64_t>(1, d.expert_tokens_routed));
  d.experts_run = d.experts_per_rank;
  d.expert_rows_total = d.experts_run * d.expert_tokens;
  if (s.workload != Workload::kTraining && s.moe_capacity_factor == 0) {
    // The rank's experts and its share of the copies (the busiest rank's under a skew).
    const double share = std::ceil(static_cast<double>(routed * k) * skew - 1e-9);
    const double miss = std::pow(1 - static_cast<double>(k) / static_cast<double>(E),
                                 static_cast<double>(routed * e));
    const double touched = static_cast<double>(d.experts_per_rank) * (1 - miss);
    d.expert_rows_total = static_cast<int64_t>(share);
    d.experts_run = std::clamp<int64_t>(std::llround(touched), 1,
                                        std::min(d.experts_per_rank, d.expert_rows_total));
    d.expert_tokens = (d.expert_rows_total + d.experts_run - 1) / d.experts_run;
  }
  const double routed_width = static_cast<double>(k * d.ffn_per_rank);
  d.active_ffn_per_rank =
      static_cast<int64_t>(std::llround(routed_width * d.expert_padding)) + d.shared_ffn_per_rank;
}

// A hybrid model's layers by kind (its pattern's letters) and its Mamba-2 mixers per rank.
void DeriveHybrid(const ModelSpec& s, DerivedShape& d) {
  d.attention_layers = AttentionLayers(s);
  for (const char c : s.hybrid_pattern) {
    d.mamba_layers += c == kHybridMamba;
    d.moe_layers += c == kHybridMoe;
  }
  d.blocks_per_layer = 1;
  if (d.mamba_layers == 0) return;
  const int64_t t = s.tensor_parallel;
  d.mamba_heads_per_rank = s.mamba_heads / t;
  d.mamba_groups_per_rank = s.mamba_groups / t;
  d.mamba_inner_per_rank = d.mamba_heads_per_rank * s.mamba_head_dim;
  d.mamba_conv_per_rank = d.mamba_inner_per_rank + 2 * d.mamba_groups_per_rank * s.mamba_state_dim;
  d.mamba_in_proj_per_rank = d.mamba_inner_per_rank + d.mamba_conv_per_rank + d.mamba_heads_per_rank;
}

}  // namespace

DerivedShape Derive(const ModelSpec& s) {
  DerivedShape d;
  const int64_t t = s.tensor_parallel;
  d.head_dim = s.head_dim;
  d.q_width = s.num_attention_heads * s.head_dim;
  d.kv_width = s.num_kv_heads * s.head_dim;
  d.heads_per_rank = s.num_attention_heads / t;
  d.kv_heads_per_rank = std::max<int64_t>(s.num_kv_heads / t, 1);
  d.ffn_per_rank = s.ffn_hidden_size / t;
  d.vocab_per_rank = (s.vocab_size + t - 1) / t;
  const int64_t c = std::max<int64_t>(s.context_parallel, 1);
  d.seq_per_rank = s.seq_length / c;
  d.tokens =
      s.workload == Workload::kDecode ? s.micro_batch_size : s.micro_batch_size * d.seq_per_rank;
  d.expert_tokens = 0;
  d.expert_tokens_routed = 0;
  d.expert_padding = 1;
  d.experts_per_rank = 0;
  d.expert_ffn_per_rank = 0;
  d.experts_run = 0;
  d.expert_rows_total = 0;
  d.shared_ffn_per_rank = s.shared_expert_ffn_hidden_size / t;
  d.active_ffn_per_rank = d.ffn_per_rank;
  if (s.num_experts > 0) DeriveExperts(s, d);
  d.moe_layers = 0;
  d.attention_layers = s.num_layers;
  d.mamba_layers = 0;
  d.blocks_per_layer = 2;
  d.mamba_heads_per_rank = d.mamba_groups_per_rank = d.mamba_inner_per_rank = 0;
  d.mamba_in_proj_per_rank = d.mamba_conv_per_rank = 0;
  if (IsHybrid(s)) {
    DeriveHybrid(s, d);
  } else if (s.num_experts > 0 && s.num_layers > s.first_dense_layers) {
    d.moe_layers =
        (s.num_layers - s.first_dense_layers) / std::max<int64_t>(1, s.moe_layer_interval);
  }
  d.dense_layers = s.num_layers - d.moe_layers - (IsHybrid(s) ? d.attention_layers + d.mamba_layers : 0);
  d.dense_ffn_per_rank = DenseFfnWidth(s) / t;
  d.v_head_dim = s.kv_lora_rank > 0 && s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
  d.window_layers = s.sliding_window == 0          ? 0
                    : s.sliding_window_layers == 0 ? s.num_layers
                                                   : s.sliding_window_layers;
  return d;
}

int64_t LocalLayerPeriod(int64_t layers, int64_t local) {
  if (local <= 0 || local >= layers) return 0;
  // layers − layers/P grows with P: the first P reaching `local` is the only candidate.
  for (int64_t p = 2; p <= layers; ++p) {
    const int64_t got = layers - layers / p;
    if (got == local) return p;
    if (got > local) return 0;
  }
  return 0;
}

int64_t LocalLayersFor(int64_t layers, int64_t base_layers, int64_t base_local) {
  if (base_local <= 0 || base_layers <= 0) return base_local;
  if (base_local >= base_layers) return layers;
  if (const int64_t p = LocalLayerPeriod(base_layers, base_local); p > 0) {
    return layers - layers / p;
  }
  return std::max<int64_t>(1, (base_local * layers + base_layers / 2) / base_layers);
}

}  // namespace wavecrest
