#include "core/layers.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cost_model.h"

namespace wavecrest {

namespace {
constexpr struct {
  LayerKind kind;
  absl::string_view name;
} kKindNames[] = {{LayerKind::kFusedAttention, "fused_attention"},
                  {LayerKind::kUnfusedAttention, "unfused_attention"},
                  {LayerKind::kTransformerLayer, "transformer_layer"}};

// 1.2816 standard deviations: the p10/p90 of a normal error with the elementwise prior's sigma.
constexpr double kP90Sigmas = 1.2816;

bool IsAttention(LayerKind kind) { return kind != LayerKind::kTransformerLayer; }
}  // namespace

std::string LayerTimingMethod(absl::string_view backend, bool warm_l2) {
  const bool analytic = backend == "analytic";
  return absl::StrCat(
      analytic ? absl::StrCat(kCostModelName, " emulated layer") : std::string(kLayerTimingMethod),
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

absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model) {
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
  // What the layer engine does not build yet: its answer would not be this model's layer.
  std::vector<std::string> missing;
  if (model.kv_lora_rank > 0) missing.push_back("multi-head latent attention");
  if (model.sliding_window > 0) missing.push_back("local (sliding-window) attention");
  if (model.context_parallel > 1) missing.push_back("context parallelism (ring attention)");
  if (model.expert_parallel > 1 || ExpertTensorParallel(model) != model.tensor_parallel) {
    missing.push_back("expert parallelism (a rank's share of experts)");
  }
  if (model.num_experts > 0 && Derive(model).dense_layers > 0) {
    missing.push_back("a mix of dense and MoE layers");
  }
  if (!missing.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "layer benchmarks do not cover ", absl::StrJoin(missing, ", "),
        " yet: the step is summed from this model's GEMMs and attention kernels instead"));
  }
  const DerivedShape d = Derive(model);
  ModelSpec s;
  s.num_layers = 1;
  s.tensor_parallel = 1;
  s.num_attention_heads = d.heads_per_rank;
  s.num_kv_heads = d.kv_heads_per_rank;
  s.head_dim = d.head_dim;
  s.seq_length = model.seq_length;
  s.micro_batch_size = model.micro_batch_size;
  s.kv_cache_length = model.kv_cache_length;
  s.dtype = model.dtype;
  s.workload = model.workload;
  s.attention = model.attention;
  s.vocab_size = 1;  // no logits in a layer
  if (IsAttention(kind)) {
    // Attention alone: no hidden size, MLP or norm of its own (fixed values keep keys equal).
    s.hidden_size = d.heads_per_rank * d.head_dim;
    s.ffn_hidden_size = s.hidden_size;
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
  } else {
    s.hidden_size = model.hidden_size;
    s.ffn_hidden_size = d.ffn_per_rank;
    s.mlp = model.mlp;
    s.fused_gate_up = model.fused_gate_up;
    s.norm = model.norm;
    s.num_experts = model.num_experts;
    s.experts_per_token = model.experts_per_token;
    s.shared_expert_ffn_hidden_size = d.shared_ffn_per_rank;
    s.shared_expert_gate = model.shared_expert_gate;
  }
  auto normalized = NormalizeSpec(s);
  if (!normalized.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the one-layer spec of this model is not valid: ", normalized.status().message()));
  }
  return LayerKey{kind, *std::move(normalized)};
}

std::vector<LayerKey> LayerKeysOf(const ModelSpec& model) {
  std::vector<LayerKey> keys;
  const LayerKind attention =
      IsFused(model.attention) ? LayerKind::kFusedAttention : LayerKind::kUnfusedAttention;
  for (LayerKind kind : {attention, LayerKind::kTransformerLayer}) {
    if (auto k = MakeLayerKey(kind, model); k.ok()) keys.push_back(*std::move(k));
  }
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
  if (IsAttention(key.kind)) return out;
  absl::StrAppend(&out, " ffn", s.ffn_hidden_size, " ", MlpName(s.mlp),
                  s.mlp == Mlp::kSwiglu && !s.fused_gate_up ? "-split" : "",
                  s.norm == Norm::kRmsNorm ? " rmsnorm" : " layernorm", " ",
                  AttentionName(s.attention));
  if (s.num_experts > 0) {
    absl::StrAppend(&out, " moe", s.num_experts, "x", s.experts_per_token);
    if (s.shared_expert_ffn_hidden_size > 0) {
      absl::StrAppend(&out, " shared", s.shared_expert_ffn_hidden_size,
                      s.shared_expert_gate ? "-gated" : "");
    }
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
