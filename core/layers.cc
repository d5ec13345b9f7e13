#include "core/layers.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cost_model.h"
#include "core/elementwise_cost.h"

namespace wavecrest {

namespace {
constexpr struct {
  LayerKind kind;
  absl::string_view name;
} kKindNames[] = {{LayerKind::kFusedAttention, "fused_attention"},
                  {LayerKind::kUnfusedAttention, "unfused_attention"},
                  {LayerKind::kTransformerLayer, "transformer_layer"}};

bool IsAttention(LayerKind kind) { return kind != LayerKind::kTransformerLayer; }
}  // namespace

std::string LayerTimingMethod(absl::string_view backend, bool warm_l2) {
  const bool analytic = backend == "analytic";
  return absl::StrCat(
      analytic ? absl::StrCat(kCostModelName, " emulated layer program")
               : std::string(kLayerTimingMethod),
      warm_l2 ? " warm-L2" : " cold-L2");
}

absl::string_view LayerKindName(LayerKind kind) {
  for (const auto& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

absl::StatusOr<LayerKind> ParseLayerKind(absl::string_view name) {
  std::string allowed;
  for (const auto& k : kKindNames) {
    if (k.name == name) return k.kind;
    absl::StrAppend(&allowed, allowed.empty() ? "" : ", ", k.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown layer kind \"", name, "\"; allowed: ", allowed));
}

namespace {

// Whether the model's window leaves out keys: local attention that is not global in effect.
bool WindowApplies(const ModelSpec& model) {
  const int64_t kv_len =
      model.workload == Workload::kDecode ? model.kv_cache_length : model.seq_length;
  return model.sliding_window > 0 && model.sliding_window < kv_len;
}

absl::Status CheckKeyKind(LayerKind kind, const ModelSpec& model) {
  if (IsNamedFusedKernel(model.attention)) {
    return absl::InvalidArgumentError(absl::StrCat(
        LayerKindName(kind), ": the model's attention is ", AttentionName(model.attention),
        ", and the worker times cuDNN's fused kernel (attention flash); the older kernel is "
        "predicted only (set attention to flash to time the layer)"));
  }
  if (kind == LayerKind::kFusedAttention && model.attention != Attention::kFlash) {
    return absl::InvalidArgumentError(
        "fused_attention: the model's attention is unfused (set attention to flash to time the "
        "fused kernel, or ask for unfused_attention)");
  }
  if (kind == LayerKind::kUnfusedAttention && model.attention != Attention::kUnfused) {
    return absl::InvalidArgumentError(
        "unfused_attention: the model's attention is flash (set attention to unfused to time "
        "the unfused path, or ask for fused_attention)");
  }
  return absl::OkStatus();
}

// Attention's fields of the one-layer spec: the heads per rank, the window of a local layer, the
// ring of context parallelism, multi-head latent attention's dims.
void SetAttentionFields(const ModelSpec& model, const DerivedShape& d, bool local, bool core_only,
                        ModelSpec& s) {
  s.num_layers = 1;
  s.tensor_parallel = 1;
  s.num_attention_heads = d.heads_per_rank;
  s.num_kv_heads = d.kv_heads_per_rank;
  s.head_dim = d.head_dim;
  s.seq_length = model.seq_length;
  s.micro_batch_size = model.micro_batch_size;
  s.kv_cache_length = model.kv_cache_length;
  s.context_parallel = model.context_parallel;
  s.dtype = model.dtype;
  s.workload = model.workload;
  s.attention = model.attention;
  s.vocab_size = 1;  // no logits in a layer
  if (local && WindowApplies(model)) s.sliding_window = model.sliding_window;
  if (model.kv_lora_rank > 0) {
    // The attention core sees only the head dims: its key keeps a fixed latent (the projections
    // are the whole layer's).
    s.kv_lora_rank = core_only ? 1 : model.kv_lora_rank;
    s.q_lora_rank = core_only ? 0 : model.q_lora_rank;
    s.qk_rope_head_dim = core_only ? 0 : model.qk_rope_head_dim;
    s.v_head_dim = d.v_head_dim;
  }
}

// The MLP's fields of a whole layer's spec: a rank's share of the experts, or the dense MLP.
absl::Status SetMlpFields(const ModelSpec& model, const DerivedShape& d, bool moe, ModelSpec& s) {
  s.hidden_size = model.hidden_size;
  s.mlp = model.mlp;
  s.fused_gate_up = model.fused_gate_up;
  s.norm = model.norm;
  if (!moe) {
    s.ffn_hidden_size = d.dense_ffn_per_rank;
    return absl::OkStatus();
  }
  if (ExpertTensorParallel(model) != model.tensor_parallel) {
    return absl::UnimplementedError(absl::StrCat(
        "whole experts (expert_tensor_parallel 1) under tensor_parallel ", model.tensor_parallel,
        " route a rank's 1/", model.tensor_parallel,
        " of the tokens: no one-rank layer stands for that yet"));
  }
  s.ffn_hidden_size = d.expert_ffn_per_rank;
  s.num_experts = model.num_experts;
  s.experts_per_token = model.experts_per_token;
  s.expert_parallel = model.expert_parallel;
  s.moe_capacity_factor = model.moe_capacity_factor;
  s.shared_expert_ffn_hidden_size = d.shared_ffn_per_rank;
  s.shared_expert_gate = model.shared_expert_gate;
  return absl::OkStatus();
}

// Layers of each role: MoE (and dense) and local (and global) counts, local spread evenly over
// MoE and dense layers where both mix.
int64_t LayersOfRole(const ModelSpec& model, LayerRole role) {
  const DerivedShape d = Derive(model);
  const int64_t L = model.num_layers;
  const int64_t moe = d.moe_layers;
  const int64_t local = WindowApplies(model) ? d.window_layers : 0;
  const int64_t local_moe =
      L > 0 ? static_cast<int64_t>(std::llround(static_cast<double>(moe * local) / L)) : 0;
  const int64_t mlp_layers = role.moe ? moe : L - moe;
  const int64_t local_here = role.moe ? local_moe : local - local_moe;
  return role.local ? local_here : mlp_layers - local_here;
}

std::string RoleName(const ModelSpec& model, LayerRole role, bool attention) {
  const DerivedShape d = Derive(model);
  const bool mixed_mlp = !attention && d.moe_layers > 0 && d.dense_layers > 0;
  const bool mixed_attention = WindowApplies(model) && d.window_layers < model.num_layers;
  std::vector<std::string> words;
  if (mixed_mlp) words.push_back(role.moe ? "MoE" : "dense");
  if (mixed_attention) words.push_back(role.local ? "local" : "global");
  return absl::StrJoin(words, " ");
}

// Why a hybrid model's layers have no whole-layer benchmark.
absl::Status HybridNotTimedWhole() {
  return absl::FailedPreconditionError(
      "a hybrid model's layers (hybrid_pattern: Mamba-2 mixers, attention and MLP blocks, one a "
      "layer) have no whole-layer benchmark yet: their GEMMs, attention and elementwise work are "
      "priced one by one");
}

}  // namespace

LayerRole DefaultRole(const ModelSpec& model) {
  const DerivedShape d = Derive(model);
  return {d.moe_layers > 0, WindowApplies(model) && d.window_layers > 0};
}

absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model) {
  if (IsHybrid(model) && !IsAttention(kind)) return HybridNotTimedWhole();
  // One key stands for every layer only where they are alike.
  int roles = 0;
  for (bool moe : {true, false}) {
    for (bool local : {true, false}) {
      if (IsAttention(kind) && moe) continue;
      const int64_t n = IsAttention(kind) ? LayersOfRole(model, {true, local}) +
                                                LayersOfRole(model, {false, local})
                                          : LayersOfRole(model, {moe, local});
      roles += n > 0 ? 1 : 0;
    }
  }
  if (roles > 1) {
    const DerivedShape d = Derive(model);
    std::vector<std::string> differ;
    if (!IsAttention(kind) && d.moe_layers > 0 && d.dense_layers > 0) differ.push_back("MoE and dense");
    if (WindowApplies(model) && d.window_layers < model.num_layers) {
      differ.push_back("local and global");
    }
    return absl::UnimplementedError(absl::StrCat(
        LayerKindName(kind), ": the model's layers differ (", absl::StrJoin(differ, "; "),
        "): one key does not stand for all of them (time --layers gives each its own)"));
  }
  return MakeLayerKey(kind, model, DefaultRole(model));
}

absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model, LayerRole role,
                                      const MoeRouting& routing) {
  if (absl::Status st = CheckKeyKind(kind, model); !st.ok()) return st;
  if (IsHybrid(model) && !IsAttention(kind)) return HybridNotTimedWhole();
  const DerivedShape d = Derive(model);
  ModelSpec s;
  SetAttentionFields(model, d, role.local, IsAttention(kind), s);
  if (IsAttention(kind)) {
    // Attention alone: no hidden size, MLP or norm of its own (fixed values keep keys equal).
    s.hidden_size = d.heads_per_rank * d.head_dim;
    s.ffn_hidden_size = s.hidden_size;
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
  } else if (absl::Status st = SetMlpFields(model, d, role.moe && d.moe_layers > 0, s); !st.ok()) {
    return st;
  }
  auto normalized = NormalizeSpec(s);
  if (!normalized.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the one-layer spec of this model is not valid: ", normalized.status().message()));
  }
  LayerKey key{kind, *std::move(normalized), {}};
  if (key.layer.num_experts > 0) {
    if (absl::Status st = CheckRouting(routing, key.layer.num_experts, "routing"); !st.ok()) {
      return st;
    }
    key.routing = routing;
  }
  return key;
}

absl::StatusOr<std::vector<LayerUse>> LayerStackOf(const ModelSpec& model,
                                                   const MoeRouting& routing) {
  const LayerKind attention =
      IsFused(model.attention) ? LayerKind::kFusedAttention : LayerKind::kUnfusedAttention;
  std::vector<LayerUse> stack;
  if (IsHybrid(model)) {
    // Its attention layers alone: no whole-layer key stands for a Mamba-2 or MLP block.
    const int64_t attention_layers = Derive(model).attention_layers;
    if (attention_layers == 0) return HybridNotTimedWhole();
    absl::StatusOr<LayerKey> key = MakeLayerKey(attention, model, {false, false}, routing);
    if (!key.ok()) return key.status();
    stack.push_back({*std::move(key), attention_layers, "attention"});
    return stack;
  }
  std::string why;
  auto add = [&](LayerKind kind, LayerRole role, int64_t layers) {
    if (layers <= 0) return;
    absl::StatusOr<LayerKey> key = MakeLayerKey(kind, model, role, routing);
    if (!key.ok()) {
      if (why.empty()) why = std::string(key.status().message());
      return;
    }
    for (LayerUse& u : stack) {
      if (u.key == *key) {
        u.layers += layers;
        return;
      }
    }
    stack.push_back({*std::move(key), layers, RoleName(model, role, IsAttention(kind))});
  };
  for (bool local : {true, false}) {
    add(attention, {false, local},
        LayersOfRole(model, {true, local}) + LayersOfRole(model, {false, local}));
  }
  for (bool moe : {true, false}) {
    for (bool local : {true, false}) {
      add(LayerKind::kTransformerLayer, {moe, local}, LayersOfRole(model, {moe, local}));
    }
  }
  if (stack.empty()) {
    return absl::FailedPreconditionError(
        why.empty() ? std::string("the model has no layer to time") : why);
  }
  return stack;
}

std::vector<LayerKey> LayerKeysOf(const ModelSpec& model) {
  std::vector<LayerKey> keys;
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(model);
  if (!stack.ok()) return keys;
  for (LayerUse& u : *stack) keys.push_back(std::move(u.key));
  return keys;
}

std::string LayerKeyString(const LayerKey& key) {
  const ModelSpec& s = key.layer;
  const bool decode = s.workload == Workload::kDecode;
  std::string out =
      absl::StrCat(LayerKindName(key.kind), " ", DTypeName(s.dtype), " ", WorkloadName(s.workload),
                   " b", s.micro_batch_size, " sq", decode ? 1 : s.seq_length, " skv",
                   decode ? s.kv_cache_length : s.seq_length);
  if (!IsAttention(key.kind)) absl::StrAppend(&out, " h", s.hidden_size);
  absl::StrAppend(&out, " heads", s.num_attention_heads, "/", s.num_kv_heads, " d", s.head_dim,
                  " causal");
  if (s.sliding_window > 0) absl::StrAppend(&out, " window", s.sliding_window);
  if (s.context_parallel > 1) absl::StrAppend(&out, " cp", s.context_parallel);
  if (s.kv_lora_rank > 0) {
    absl::StrAppend(&out, " mla");
    if (!IsAttention(key.kind)) {
      absl::StrAppend(&out, " q", s.q_lora_rank, " kv", s.kv_lora_rank, " rope",
                      s.qk_rope_head_dim);
    }
    absl::StrAppend(&out, " dv", Derive(s).v_head_dim);
  }
  if (IsAttention(key.kind)) return out;
  absl::StrAppend(&out, " ffn", s.ffn_hidden_size, " ", MlpName(s.mlp),
                  s.mlp == Mlp::kSwiglu && !s.fused_gate_up ? "-split" : "",
                  s.norm == Norm::kRmsNorm ? " rmsnorm" : " layernorm", " ",
                  AttentionName(s.attention));
  if (s.num_experts > 0) {
    absl::StrAppend(&out, " moe", s.num_experts, "x", s.experts_per_token);
    if (s.expert_parallel > 1) absl::StrAppend(&out, " ep", s.expert_parallel);
    if (s.moe_capacity_factor > 0) absl::StrAppend(&out, " capacity", s.moe_capacity_factor);
    if (s.shared_expert_ffn_hidden_size > 0) {
      absl::StrAppend(&out, " shared", s.shared_expert_ffn_hidden_size,
                      s.shared_expert_gate ? "-gated" : "");
    }
    if (!key.routing.balanced()) absl::StrAppend(&out, " ", RoutingName(key.routing));
  }
  return out;
}

std::vector<Gemm> LayerGemms(const LayerKey& key) {
  std::vector<Gemm> gemms = BuildGemms(key.layer);
  std::erase_if(gemms, [&](const Gemm& g) {
    if (g.name == kLogits) return true;
    if (!IsAttention(key.kind)) return false;
    return g.name != kAttnFused && g.name != kAttnScore && g.name != kAttnOverValue;
  });
  return gemms;
}

double LayerFlops(const LayerKey& key) {
  double flops = 0;
  for (const Gemm& g : LayerGemms(key)) flops += g.step_flops();
  return flops;
}

LayerPrediction PredictLayer(const GpuSpec& gpu, const LayerKey& key) {
  LayerPrediction p;
  double band_lo = 0, band_hi = 0;  // time-weighted sums
  for (const Gemm& g : LayerGemms(key)) {
    const GemmPrediction gp = Predict(gpu, g);
    const double t = gp.time_s * static_cast<double>(g.count);
    p.gemm_time_s += t;
    band_lo += gp.band_p10 * t;
    band_hi += gp.band_p90 * t;
    p.flops += g.step_flops();
  }
  const ElementwiseEstimate e = EstimateElementwise(key.layer, gpu);
  // Attention alone carries the softmax (unfused) only; a whole layer all of its share.
  p.elementwise_time_s = IsAttention(key.kind) ? e.softmax_time_s : e.layer_time_s;
  band_lo -= kP90Sigmas * kElementwiseRelativeSigma * p.elementwise_time_s;
  band_hi += kP90Sigmas * kElementwiseRelativeSigma * p.elementwise_time_s;
  p.time_s = p.gemm_time_s + p.elementwise_time_s;
  if (p.time_s > 0) {
    p.band_p10 = band_lo / p.time_s;
    p.band_p90 = band_hi / p.time_s;
    p.tflops = p.flops / p.time_s / 1e12;
  }
  return p;
}

}  // namespace wavecrest
