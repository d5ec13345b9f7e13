#include "core/op_recompute.h"

#include <string>
#include <vector>

#include "core/gemm.h"

namespace wavecrest {
namespace {

// One aten.mm of a block: the model's GEMM it is part of (a fused GEMM holds several: QKV is
// wq, wk, wv; gate+up is w1, w3), its share of that GEMM's work and its output's width per token
// on a rank.
struct BlockMm {
  absl::string_view gemm;
  double share = 1;
  double width = 0;
};

// The block's mms in the order a Llama-style block runs them (attention's input projections,
// the output projection, then the MLP: the router and shared experts, then a dense MLP's w1,
// w3, w2), in the forms gemm.cc builds for this model. Grouped expert GEMMs are not mms (never
// kept). A model with dense and MoE layers lists both kinds' mms in one sequence.
std::vector<BlockMm> BlockMms(const ModelSpec& s, const DerivedShape& d) {
  const double q = static_cast<double>(d.heads_per_rank * d.head_dim);
  const double kv = static_cast<double>(d.kv_heads_per_rank * d.head_dim);
  const double h = static_cast<double>(s.hidden_size);
  const double f = static_cast<double>(d.dense_ffn_per_rank);
  const double shared = static_cast<double>(d.shared_ffn_per_rank);
  const bool gelu = s.mlp == Mlp::kGelu;
  std::vector<BlockMm> mms;
  if (s.kv_lora_rank > 0) {
    if (s.q_lora_rank > 0) {
      mms.push_back({kMlaQDown, 1, static_cast<double>(s.q_lora_rank)});
      mms.push_back({kMlaQUp, 1, q});
    } else {
      mms.push_back({kMlaQ, 1, q});
    }
    mms.push_back({kMlaKvDown, 1, static_cast<double>(s.kv_lora_rank + s.qk_rope_head_dim)});
    mms.push_back({kMlaKvUp, 1, static_cast<double>(d.heads_per_rank * d.v_head_dim)});
  } else {
    const double qkv = q + 2 * kv;
    mms.push_back({kQkv, q / qkv, q});
    mms.push_back({kQkv, kv / qkv, kv});
    mms.push_back({kQkv, kv / qkv, kv});
  }
  mms.push_back({kAttnProj, 1, h});
  if (d.moe_layers > 0) {
    mms.push_back({kMoeRouter, 1, static_cast<double>(s.num_experts)});
    if (shared > 0 && gelu) mms.push_back({kSharedUp, 1, shared});
    if (shared > 0 && !gelu) {
      mms.push_back({kSharedGateUp, 0.5, shared});
      mms.push_back({kSharedGateUp, 0.5, shared});
    }
    if (shared > 0) mms.push_back({kSharedDown, 1, h});
  }
  if (d.dense_layers > 0) {
    if (gelu) {
      mms.push_back({kMlpUp, 1, f});
    } else if (s.fused_gate_up) {
      mms.push_back({kMlpGateUp, 0.5, f});
      mms.push_back({kMlpGateUp, 0.5, f});
    } else {
      mms.push_back({kMlpGate, 1, f});
      mms.push_back({kMlpUp, 1, f});
    }
    mms.push_back({kMlpDown, 1, h});
  }
  return mms;
}

}  // namespace

double OpRecomputeForwardS(const Analysis& a, double gemm_stretch) {
  const ModelSpec& s = a.spec;
  const DerivedShape d = Derive(s);
  // The forward time of each of the model's GEMMs this step (all layers, one micro-batch).
  auto forward_s = [&](absl::string_view name) {
    double t = 0;
    for (const GemmAnalysis& g : a.gemms) {
      if (g.gemm.pass == Pass::kForward && g.gemm.name == name) {
        t += g.prediction.time_s * static_cast<double>(g.gemm.count);
      }
    }
    return t;
  };
  double recompute = 0;
  int mm = 0;
  for (const BlockMm& m : BlockMms(s, d)) {
    if (++mm % 2 == 0) recompute += m.share * forward_s(m.gemm);
  }
  for (const GemmAnalysis& g : a.gemms) {
    if (g.gemm.pass == Pass::kForward && IsRoutedExpertGemm(g.gemm.name)) {
      recompute += g.prediction.time_s * static_cast<double>(g.gemm.count);
    }
  }
  const double layers = static_cast<double>(s.num_layers);
  return gemm_stretch * recompute +
         layers * (a.elementwise.layer_time_s - a.elementwise.softmax_time_s) / 3;
}

double OpRecomputeStoredBytesPerToken(const ModelSpec& spec, const DerivedShape& d,
                                      bool sequence_parallel) {
  const double t = static_cast<double>(spec.tensor_parallel);
  const double h = static_cast<double>(spec.hidden_size);
  // The layer's input (the checkpoint keeps it) and attention's output (SDPA, kept).
  double elements = (sequence_parallel ? h / t : h) +
                    static_cast<double>(d.heads_per_rank * d.v_head_dim);
  int mm = 0;
  for (const BlockMm& m : BlockMms(spec, d)) {
    if (++mm % 2 == 1) elements += m.width;
  }
  return 2 * elements;
}

}  // namespace wavecrest
