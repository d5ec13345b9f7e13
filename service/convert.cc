#include "service/convert.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"
#include "core/memory.h"
#include "service/errors.h"

namespace wavecrest {

absl::StatusOr<DType> FromProto(v1::Dtype d) {
  switch (d) {
    case v1::DTYPE_UNSPECIFIED:
    case v1::DTYPE_BF16:
      return DType::kBf16;
    case v1::DTYPE_FP16:
      return DType::kFp16;
    case v1::DTYPE_FP32:
      return DType::kFp32;
    case v1::DTYPE_TF32:
      return DType::kTf32;
    case v1::DTYPE_FP8_E4M3:
      return DType::kFp8E4M3;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown value ", static_cast<int>(d),
                                                 "; allowed: DTYPE_BF16, DTYPE_FP16, "
                                                 "DTYPE_FP32, DTYPE_TF32, DTYPE_FP8_E4M3"));
}

v1::Dtype ToProto(DType d) {
  switch (d) {
    case DType::kBf16:
      return v1::DTYPE_BF16;
    case DType::kFp16:
      return v1::DTYPE_FP16;
    case DType::kFp32:
      return v1::DTYPE_FP32;
    case DType::kTf32:
      return v1::DTYPE_TF32;
    case DType::kFp8E4M3:
      return v1::DTYPE_FP8_E4M3;
  }
  return v1::DTYPE_UNSPECIFIED;
}

absl::StatusOr<Layout> FromProto(v1::Layout l) {
  switch (l) {
    case v1::LAYOUT_UNSPECIFIED:
    case v1::LAYOUT_TN:
      return Layout::kTN;
    case v1::LAYOUT_NN:
      return Layout::kNN;
    case v1::LAYOUT_NT:
      return Layout::kNT;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown value ", static_cast<int>(l),
                                                 "; allowed: LAYOUT_TN, LAYOUT_NN, LAYOUT_NT"));
}

v1::Layout ToProto(Layout l) {
  switch (l) {
    case Layout::kTN:
      return v1::LAYOUT_TN;
    case Layout::kNN:
      return v1::LAYOUT_NN;
    case Layout::kNT:
      return v1::LAYOUT_NT;
  }
  return v1::LAYOUT_UNSPECIFIED;
}

v1::Pass ToProto(Pass p) {
  switch (p) {
    case Pass::kForward:
      return v1::PASS_FORWARD;
    case Pass::kDgrad:
      return v1::PASS_DGRAD;
    case Pass::kWgrad:
      return v1::PASS_WGRAD;
    case Pass::kBackward:
      return v1::PASS_BACKWARD;
  }
  return v1::PASS_UNSPECIFIED;
}

v1::Attention ToProto(Attention a) {
  switch (a) {
    case Attention::kFlash:
      return v1::ATTENTION_FLASH;
    case Attention::kFlash2:
      return v1::ATTENTION_FLASH2;
    case Attention::kFlash1:
      return v1::ATTENTION_FLASH1;
    case Attention::kFlash1Triton:
      return v1::ATTENTION_FLASH1_TRITON;
    default:
      return v1::ATTENTION_UNFUSED;
  }
}

v1::Workload ToProto(Workload w) {
  switch (w) {
    case Workload::kTraining:
      return v1::WORKLOAD_TRAINING;
    case Workload::kPrefill:
      return v1::WORKLOAD_PREFILL;
    case Workload::kDecode:
      return v1::WORKLOAD_DECODE;
  }
  return v1::WORKLOAD_UNSPECIFIED;
}

v1::Knob ToProto(Knob k) {
  switch (k) {
    case Knob::kHeads:
      return v1::KNOB_HEADS;
    case Knob::kKvHeads:
      return v1::KNOB_KV_HEADS;
    case Knob::kHidden:
      return v1::KNOB_HIDDEN;
    case Knob::kFfn:
      return v1::KNOB_FFN;
    case Knob::kVocab:
      return v1::KNOB_VOCAB;
    case Knob::kExperts:
      return v1::KNOB_EXPERTS;
    case Knob::kLayers:
      return v1::KNOB_LAYERS;
    case Knob::kKvGroup:
      return v1::KNOB_KV_GROUP;
    case Knob::kKvCache:
      return v1::KNOB_KV_CACHE;
    case Knob::kHeadDim:
      return v1::KNOB_HEAD_DIM;
    case Knob::kTotalParams:
      return v1::KNOB_TOTAL_PARAMS;
  }
  return v1::KNOB_UNSPECIFIED;
}

absl::StatusOr<Knob> FromProto(v1::Knob k) {
  switch (k) {
    case v1::KNOB_HEADS:
      return Knob::kHeads;
    case v1::KNOB_KV_HEADS:
      return Knob::kKvHeads;
    case v1::KNOB_HIDDEN:
      return Knob::kHidden;
    case v1::KNOB_FFN:
      return Knob::kFfn;
    case v1::KNOB_VOCAB:
      return Knob::kVocab;
    case v1::KNOB_LAYERS:
      return Knob::kLayers;
    case v1::KNOB_EXPERTS:
      return Knob::kExperts;
    case v1::KNOB_KV_GROUP:
      return Knob::kKvGroup;
    case v1::KNOB_KV_CACHE:
      return Knob::kKvCache;
    case v1::KNOB_HEAD_DIM:
      return Knob::kHeadDim;
    case v1::KNOB_TOTAL_PARAMS:
      return Knob::kTotalParams;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value ", static_cast<int>(k),
      "; allowed: KNOB_HEADS, KNOB_KV_HEADS, KNOB_HIDDEN, KNOB_FFN, KNOB_VOCAB, KNOB_LAYERS, "
      "KNOB_EXPERTS, KNOB_KV_GROUP, KNOB_KV_CACHE, KNOB_HEAD_DIM, KNOB_TOTAL_PARAMS"));
}

v1::Bound ToProto(Bound b) {
  switch (b) {
    case Bound::kCompute:
      return v1::BOUND_COMPUTE;
    case Bound::kMemory:
      return v1::BOUND_MEMORY;
    case Bound::kLatency:
      return v1::BOUND_LATENCY;
  }
  return v1::BOUND_UNSPECIFIED;
}

namespace {

void BadEnum(std::vector<FieldViolation>* v, const char* field, int value, const char* allowed) {
  v->push_back({field, absl::StrCat("unknown value ", value, "; allowed: ", allowed)});
}

// The spec's enums, each unknown value a violation naming the allowed ones (in field order).
void EnumsFromProto(const v1::ModelSpec& p, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (p.mlp()) {
    case v1::MLP_UNSPECIFIED:
    case v1::MLP_GELU:
      s.mlp = Mlp::kGelu;
      break;
    case v1::MLP_SWIGLU:
      s.mlp = Mlp::kSwiglu;
      break;
    default:
      BadEnum(violations, "mlp", p.mlp(), "MLP_GELU, MLP_SWIGLU");
  }
  if (auto d = FromProto(p.dtype()); d.ok()) {
    s.dtype = *d;
  } else {
    violations->push_back({"dtype", std::string(d.status().message())});
  }
  switch (p.attention()) {
    case v1::ATTENTION_UNSPECIFIED:
    case v1::ATTENTION_FLASH:
      s.attention = Attention::kFlash;
      break;
    case v1::ATTENTION_UNFUSED:
      s.attention = Attention::kUnfused;
      break;
    case v1::ATTENTION_FLASH2:
      s.attention = Attention::kFlash2;
      break;
    case v1::ATTENTION_FLASH1:
      s.attention = Attention::kFlash1;
      break;
    case v1::ATTENTION_FLASH1_TRITON:
      s.attention = Attention::kFlash1Triton;
      break;
    default:
      BadEnum(violations, "attention", p.attention(),
              "ATTENTION_UNFUSED, ATTENTION_FLASH, ATTENTION_FLASH2, ATTENTION_FLASH1, "
              "ATTENTION_FLASH1_TRITON");
  }
  switch (p.workload()) {
    case v1::WORKLOAD_UNSPECIFIED:
    case v1::WORKLOAD_TRAINING:
      s.workload = Workload::kTraining;
      break;
    case v1::WORKLOAD_PREFILL:
      s.workload = Workload::kPrefill;
      break;
    case v1::WORKLOAD_DECODE:
      s.workload = Workload::kDecode;
      break;
    default:
      BadEnum(violations, "workload", p.workload(),
              "WORKLOAD_TRAINING, WORKLOAD_PREFILL, WORKLOAD_DECODE");
  }
  switch (p.norm()) {
    case v1::NORM_UNSPECIFIED:
    case v1::NORM_LAYERNORM:
      s.norm = Norm::kLayerNorm;
      break;
    case v1::NORM_RMSNORM:
      s.norm = Norm::kRmsNorm;
      break;
    default:
      BadEnum(violations, "norm", p.norm(), "NORM_LAYERNORM, NORM_RMSNORM");
  }
  switch (p.bias()) {
    case v1::BIAS_UNSPECIFIED:
    case v1::BIAS_NONE:
      s.bias = Bias::kNone;
      break;
    case v1::BIAS_QKV:
      s.bias = Bias::kQkv;
      break;
    case v1::BIAS_ALL:
      s.bias = Bias::kAll;
      break;
    default:
      BadEnum(violations, "bias", p.bias(), "BIAS_NONE, BIAS_QKV, BIAS_ALL");
  }
}

}  // namespace

ModelSpec FromProto(const v1::ModelSpec& p, std::vector<FieldViolation>* violations) {
  ModelSpec s;
  s.name = p.name();
  s.hidden_size = p.hidden_size();
  s.num_attention_heads = p.num_attention_heads();
  s.num_kv_heads = p.num_kv_heads();
  s.head_dim = p.head_dim();
  s.num_layers = p.num_layers();
  s.ffn_hidden_size = p.ffn_hidden_size();
  s.fused_gate_up = p.has_fused_gate_up() ? p.fused_gate_up() : true;
  s.vocab_size = p.vocab_size();
  s.seq_length = p.seq_length();
  s.micro_batch_size = p.micro_batch_size();
  s.tensor_parallel = p.tensor_parallel();
  s.pipeline_parallel = p.pipeline_parallel();
  s.tied_embeddings = p.tied_embeddings();
  s.kv_cache_length = p.kv_cache_length();
  s.learned_position_embeddings = p.learned_position_embeddings();
  s.data_parallel = p.data_parallel();
  s.context_parallel = p.context_parallel();
  s.expert_parallel = p.expert_parallel();
  s.expert_tensor_parallel = p.expert_tensor_parallel();
  s.moe_capacity_factor = p.moe_capacity_factor();
  s.moe_routing_skew = p.moe_routing_skew();
  s.num_experts = p.num_experts();
  s.experts_per_token = p.experts_per_token();
  s.shared_expert_ffn_hidden_size = p.shared_expert_ffn_hidden_size();
  s.shared_expert_gate = p.shared_expert_gate();
  s.expert_groups = p.expert_groups();
  s.expert_groups_per_token = p.expert_groups_per_token();
  s.first_dense_layers = p.first_dense_layers();
  s.moe_layer_interval = p.moe_layer_interval();
  s.dense_ffn_hidden_size = p.dense_ffn_hidden_size();
  s.kv_lora_rank = p.kv_lora_rank();
  s.q_lora_rank = p.q_lora_rank();
  s.qk_rope_head_dim = p.qk_rope_head_dim();
  s.v_head_dim = p.v_head_dim();
  s.sliding_window = p.sliding_window();
  s.sliding_window_layers = p.sliding_window_layers();
  EnumsFromProto(p, s, violations);
  return s;
}

v1::ModelSpec ToProto(const ModelSpec& s) {
  v1::ModelSpec p;
  p.set_name(s.name);
  p.set_hidden_size(s.hidden_size);
  p.set_num_attention_heads(s.num_attention_heads);
  p.set_num_kv_heads(s.num_kv_heads);
  p.set_head_dim(s.head_dim);
  p.set_num_layers(s.num_layers);
  p.set_ffn_hidden_size(s.ffn_hidden_size);
  p.set_mlp(s.mlp == Mlp::kGelu ? v1::MLP_GELU : v1::MLP_SWIGLU);
  if (s.mlp == Mlp::kSwiglu) p.set_fused_gate_up(s.fused_gate_up);
  p.set_vocab_size(s.vocab_size);
  p.set_seq_length(s.seq_length);
  p.set_micro_batch_size(s.micro_batch_size);
  p.set_tensor_parallel(s.tensor_parallel);
  p.set_pipeline_parallel(s.pipeline_parallel);
  p.set_dtype(ToProto(s.dtype));
  p.set_attention(ToProto(s.attention));
  p.set_workload(ToProto(s.workload));
  p.set_tied_embeddings(s.tied_embeddings);
  p.set_kv_cache_length(s.kv_cache_length);
  p.set_norm(s.norm == Norm::kLayerNorm ? v1::NORM_LAYERNORM : v1::NORM_RMSNORM);
  switch (s.bias) {
    case Bias::kNone:
      p.set_bias(v1::BIAS_NONE);
      break;
    case Bias::kQkv:
      p.set_bias(v1::BIAS_QKV);
      break;
    case Bias::kAll:
      p.set_bias(v1::BIAS_ALL);
      break;
  }
  p.set_learned_position_embeddings(s.learned_position_embeddings);
  p.set_data_parallel(s.data_parallel);
  p.set_context_parallel(s.context_parallel);
  p.set_expert_parallel(s.expert_parallel);
  p.set_expert_tensor_parallel(s.expert_tensor_parallel);
  p.set_moe_capacity_factor(s.moe_capacity_factor);
  p.set_moe_routing_skew(s.moe_routing_skew);
  p.set_num_experts(s.num_experts);
  p.set_experts_per_token(s.experts_per_token);
  p.set_shared_expert_ffn_hidden_size(s.shared_expert_ffn_hidden_size);
  p.set_shared_expert_gate(s.shared_expert_gate);
  p.set_expert_groups(s.expert_groups);
  p.set_expert_groups_per_token(s.expert_groups_per_token);
  p.set_first_dense_layers(s.first_dense_layers);
  p.set_moe_layer_interval(s.moe_layer_interval);
  p.set_dense_ffn_hidden_size(s.dense_ffn_hidden_size);
  p.set_kv_lora_rank(s.kv_lora_rank);
  p.set_q_lora_rank(s.q_lora_rank);
  p.set_qk_rope_head_dim(s.qk_rope_head_dim);
  p.set_v_head_dim(s.v_head_dim);
  p.set_sliding_window(s.sliding_window);
  p.set_sliding_window_layers(s.sliding_window_layers);
  return p;
}

v1::MemoryEstimate ToProto(const MemoryEstimate& m) {
  v1::MemoryEstimate p;
  p.set_weights_bytes(m.weights_bytes);
  p.set_gradients_bytes(m.gradients_bytes);
  p.set_optimizer_bytes(m.optimizer_bytes);
  p.set_activations_bytes(m.activations_bytes);
  p.set_activations_full_recompute_bytes(m.activations_full_recompute_bytes);
  p.set_kv_cache_bytes(m.kv_cache_bytes);
  p.set_total_bytes(m.total_bytes);
  p.set_total_full_recompute_bytes(m.total_full_recompute_bytes);
  p.set_capacity_bytes(m.capacity_bytes);
  p.set_fits(m.fits);
  p.set_fits_with_recompute(m.fits_with_recompute);
  p.set_offloaded_bytes(m.offloaded_bytes);
  p.set_gathered_bytes(m.gathered_bytes);
  p.set_stored_bytes_per_layer(m.stored_bytes_per_layer);
  return p;
}

v1::GemmShape ToProto(const GemmShape& s) {
  v1::GemmShape p;
  p.set_m(s.m);
  p.set_n(s.n);
  p.set_k(s.k);
  p.set_batch(s.batch);
  return p;
}

v1::GemmTiming TimingOf(const GemmKey& key) {
  v1::GemmTiming t;
  *t.mutable_shape() = ToProto(key.shape);
  t.set_layout(ToProto(key.layout));
  t.set_dtype(ToProto(key.dtype));
  return t;
}

absl::StatusOr<LayerKind> FromProto(v1::LayerKind k) {
  switch (k) {
    case v1::LAYER_KIND_FUSED_ATTENTION:
      return LayerKind::kFusedAttention;
    case v1::LAYER_KIND_UNFUSED_ATTENTION:
      return LayerKind::kUnfusedAttention;
    case v1::LAYER_KIND_TRANSFORMER:
      return LayerKind::kTransformerLayer;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("must be LAYER_KIND_FUSED_ATTENTION, LAYER_KIND_UNFUSED_ATTENTION or "
                       "LAYER_KIND_TRANSFORMER; got ",
                       static_cast<int>(k)));
  }
}

v1::LayerKind ToProto(LayerKind k) {
  switch (k) {
    case LayerKind::kFusedAttention:
      return v1::LAYER_KIND_FUSED_ATTENTION;
    case LayerKind::kUnfusedAttention:
      return v1::LAYER_KIND_UNFUSED_ATTENTION;
    case LayerKind::kTransformerLayer:
      return v1::LAYER_KIND_TRANSFORMER;
  }
  return v1::LAYER_KIND_UNSPECIFIED;
}

absl::StatusOr<LayerKey> LayerKeyFromProto(const v1::LayerShape& shape, absl::string_view field) {
  absl::StatusOr<LayerKind> kind = FromProto(shape.kind());
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".kind: ", kind.status().message()));
  }
  std::vector<FieldViolation> violations;
  ModelSpec spec = FromProto(shape.layer(), &violations);
  if (violations.empty()) {
    spec = WithDefaults(spec);
    violations = Validate(spec);
  }
  if (!violations.empty()) {
    return ViolationsToStatus(violations, absl::StrCat(field, ".layer."));
  }
  absl::StatusOr<MoeRouting> routing =
      ParseRouting(shape.routing(), absl::StrCat(field, ".routing"));
  if (!routing.ok()) return routing.status();
  absl::StatusOr<LayerKey> key = MakeLayerKey(*kind, spec, DefaultRole(spec), *routing);
  if (!key.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".kind: ", key.status().message()));
  }
  return key;
}

v1::LayerShape ToProto(const LayerKey& key) {
  v1::LayerShape s;
  s.set_kind(ToProto(key.kind));
  *s.mutable_layer() = ToProto(key.layer);
  if (!key.routing.balanced()) s.set_routing(RoutingName(key.routing));
  return s;
}

v1::LayerTiming LayerTimingOf(const GpuSpec& gpu, const LayerKey& key) {
  const LayerPrediction p = PredictLayer(gpu, key);
  v1::LayerTiming t;
  *t.mutable_shape() = ToProto(key);
  t.set_key(LayerKeyString(key));
  t.set_flops(p.flops);
  t.set_predicted_sum_s(p.time_s);
  t.set_predicted_elementwise_s(p.elementwise_time_s);
  if (absl::StatusOr<LayerProgram> program = PlanLayerProgram(key); program.ok()) {
    t.set_predicted_program_s(EmulateLayerProgram(gpu, key, *program).time_s);
  }
  return t;
}

v1::LayerTiming PredictedLayerTiming(const GpuSpec& gpu, const LayerKey& key) {
  const LayerPrediction p = PredictLayer(gpu, key);
  v1::LayerTiming t = LayerTimingOf(gpu, key);
  t.set_time_s(p.time_s);
  t.set_tflops(p.tflops);
  v1::Provenance* prov = t.mutable_provenance();
  *prov = PredictedProvenance(gpu, key.layer.dtype, 0);
  prov->set_error_band_p10(p.band_p10);
  prov->set_error_band_p90(p.band_p90);
  if (absl::StatusOr<LayerProgram> program = PlanLayerProgram(key); !program.ok()) {
    t.set_sum_of_parts_reason(std::string(program.status().message()));
  }
  return t;
}

v1::GemmReport ToProto(const Gemm& g) {
  v1::GemmReport r;
  r.set_name(g.name);
  r.set_pass(ToProto(g.pass));
  *r.mutable_shape() = ToProto(g.shape);
  r.set_layout(ToProto(g.layout));
  r.set_dtype(ToProto(g.dtype));
  r.set_flops(g.flops);
  r.set_count(g.count);
  r.set_fused_attention(g.fused_attention);
  return r;
}

v1::ParameterCounts ToProto(const ParamCounts& c) {
  v1::ParameterCounts p;
  p.set_total_params(c.total_params);
  p.set_per_layer_params(c.per_layer_params);
  p.set_embedding_params(c.embedding_params);
  p.set_non_embedding_params(c.non_embedding_params);
  p.set_active_params(c.active_params);
  return p;
}

v1::CatalogGpu ToProto(const GpuSpec& g) {
  v1::CatalogGpu c;
  c.set_name(g.name);
  c.set_display_name(g.display_name);
  c.set_architecture(g.architecture);
  c.set_compute_capability(g.compute_capability);
  c.set_sm_count(g.sm_count);
  c.set_peak_bf16_tflops(g.peak_bf16 / 1e12);
  c.set_peak_fp8_tflops(g.peak_fp8 / 1e12);
  c.set_memory_bandwidth_gbps(g.memory_bandwidth_bytes_per_s / 1e9);
  c.set_memory_bytes(g.memory_bytes);
  c.set_l2_bytes(g.l2_bytes);
  c.set_alignment_bytes(g.alignment_bytes);
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32, DType::kFp8E4M3}) {
    if (g.Supports(d)) c.add_dtypes(ToProto(d));
  }
  return c;
}

v1::TileChoice ToProto(const GemmPrediction& p) {
  v1::TileChoice t;
  t.set_tile_m(p.tile.m);
  t.set_tile_n(p.tile.n);
  t.set_split_k(p.split_k);
  t.set_tiles(p.tiles);
  t.set_waves(p.waves);
  t.set_tile_efficiency(p.tile_efficiency);
  t.set_wave_efficiency(p.wave_efficiency);
  t.set_alignment_efficiency(p.alignment_efficiency);
  return t;
}

std::string PredictedMethod(const GpuSpec& gpu, DType dtype) {
  return absl::StrCat(kCostModelName, " of ", kModelledLibrary, " (", gpu.Calibration(dtype).label,
                      ")");
}

v1::Provenance PredictedProvenance(const GpuSpec& gpu, DType dtype, double time_s) {
  v1::Provenance p;
  p.set_source(v1::SOURCE_PREDICTED);
  p.set_method(PredictedMethod(gpu, dtype));
  p.set_calibration(gpu.Calibration(dtype).label);
  if (time_s > 0) {
    const auto [p10, p90] = ErrorBand(gpu, dtype, time_s);
    p.set_error_band_p10(p10);
    p.set_error_band_p90(p90);
  }
  v1::DeviceFingerprint* d = p.mutable_device();
  d->set_name(gpu.display_name);
  d->set_catalog_name(gpu.name);
  d->set_compute_capability(gpu.compute_capability);
  d->set_sm_count(static_cast<int32_t>(gpu.sm_count));
  d->set_memory_bytes(gpu.memory_bytes);
  d->set_l2_bytes(gpu.l2_bytes);
  d->set_max_sm_clock_mhz(static_cast<int32_t>(gpu.boost_clock_mhz));
  d->set_backend("analytic");
  return p;
}

v1::AnalyzeResponse ToProto(const Analysis& a) {
  v1::AnalyzeResponse r;
  *r.mutable_model() = ToProto(a.spec);
  r.set_gpu(a.gpu->name);
  for (const GemmAnalysis& g : a.gemms) {
    v1::GemmAnalysis* out = r.add_gemms();
    *out->mutable_gemm() = ToProto(g.gemm);
    out->set_step_flop_share(g.step_flop_share);
    auto align = [](v1::DimAlignment* d, const DimAlignment& x) {
      d->set_largest_pow2(x.pow2);
      d->set_meets_rule(x.meets_rule);
    };
    align(out->mutable_m_alignment(), g.m_align);
    align(out->mutable_n_alignment(), g.n_align);
    align(out->mutable_k_alignment(), g.k_align);
    out->set_time_s(g.prediction.time_s);
    out->set_tflops(g.prediction.tflops);
    out->set_bound(ToProto(g.prediction.bound));
    *out->mutable_tile() = ToProto(g.prediction);
    out->set_error_band_p10(g.prediction.band_p10);
    out->set_error_band_p90(g.prediction.band_p90);
    for (const std::string& why : g.prediction.penalties) out->add_penalties(why);
  }
  *r.mutable_params() = ToProto(a.params);
  r.set_step_flops(a.flops.step_flops);
  r.set_model_flops(a.flops.model_flops);
  r.set_tokens_per_step(a.flops.tokens_per_step);
  r.set_gemm_time_s(a.gemm_time_s);
  r.set_elementwise_time_s(a.elementwise.time_s);
  r.set_step_time_s(a.step_time_s);
  r.set_mfu(a.mfu);
  r.set_tokens_per_second_per_gpu(a.tokens_per_s_per_gpu);
  if (a.step_time_s > 0) {
    r.set_memory_bandwidth_utilization(DecodeBytesPerStep(a.spec) /
                                       (a.step_time_s * a.gpu->memory_bandwidth_bytes_per_s));
  }
  *r.mutable_memory() = ToProto(EstimateMemory(a.spec, *a.gpu));
  if (std::string routing = ExpertRoutingAssumption(a.spec); !routing.empty()) {
    r.add_assumptions(std::move(routing));
  }
  for (const RuleViolation& v : a.rules) {
    v1::RuleViolation* out = r.add_rules();
    out->set_priced(v.priced);
    out->set_id(v.id);
    out->set_paper_rule(v.paper_rule);
    out->set_message(v.message);
    for (const auto& h : v.hurts) out->add_hurts(h);
  }
  *r.mutable_provenance() = PredictedProvenance(*a.gpu, a.spec.dtype, 0);
  // The step's band: the GEMMs' bands weighted by their share of the step (their errors come
  // from one model, so they are taken as moving together: a conservative band).
  double p10 = 0, p90 = 0;
  for (const GemmAnalysis& g : a.gemms) {
    const double w = g.prediction.time_s * static_cast<double>(g.gemm.count) / a.step_time_s;
    p10 += w * g.prediction.band_p10;
    p90 += w * g.prediction.band_p90;
  }
  r.mutable_provenance()->set_error_band_p10(p10);
  r.mutable_provenance()->set_error_band_p90(p90);
  return r;
}

absl::StatusOr<RunConfig> FromProto(const v1::RunConfig& r, absl::string_view prefix) {
  std::vector<FieldViolation> v;
  RunConfig c;
  c.num_gpus = r.num_gpus();
  c.global_batch = r.global_batch();
  c.interleave = r.interleave() == 0 ? 1 : r.interleave();
  c.sequence_parallel = r.sequence_parallel();
  c.zero_stage = r.zero_stage();
  c.plan = r.plan();
  c.keep_degrees = r.keep_degrees();
  c.train_tokens = r.train_tokens();
  c.dp_overlap = r.dp_overlap();
  c.tp_overlap = r.tp_overlap();
  c.zero3_prefetch = r.zero3_prefetch() && !r.no_zero3_prefetch();
  c.reshard_after_forward = !r.no_reshard_after_forward();
  c.pp_overlap = !r.no_pp_overlap();
  c.overlap_grad_reduce = r.overlap_grad_reduce();
  c.ep_overlap = r.ep_overlap();
  c.fp8_param_gather = r.fp8_param_gather();
  if (r.has_moe_host_s()) c.moe_host_s = r.moe_host_s();
  c.network = r.network();
  if (absl::StatusOr<EpDispatcher> d = ParseEpDispatcher(r.ep_dispatcher()); d.ok()) {
    c.ep_dispatcher = *d;
  } else {
    v.push_back({absl::StrCat(prefix, "ep_dispatcher"), std::string(d.status().message())});
  }
  c.offload_activations = r.offload_activations();
  c.gradient_bytes = r.gradient_bytes();
  switch (r.recompute()) {
    case v1::RECOMPUTE_UNSPECIFIED:
    case v1::RECOMPUTE_NONE:
      c.recompute = Recompute::kNone;
      break;
    case v1::RECOMPUTE_SELECTIVE:
      c.recompute = Recompute::kSelective;
      break;
    case v1::RECOMPUTE_FULL:
      c.recompute = Recompute::kFull;
      break;
    default:
      v.push_back({absl::StrCat(prefix, "recompute"),
                   absl::StrCat("unknown value ", r.recompute(),
                                "; allowed: RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL")});
  }
  const std::pair<const char*, int64_t> counts[] = {{"num_gpus", r.num_gpus()},
                                                    {"global_batch", r.global_batch()},
                                                    {"interleave", r.interleave()}};
  for (const auto& [name, value] : counts) {
    if (value < 0 || value > (int64_t{1} << 24)) {
      v.push_back({absl::StrCat(prefix, name),
                   absl::StrCat("must be in [0, ", int64_t{1} << 24, "]; got ", value)});
    }
  }
  // Up to 1e15 tokens: a thousand times the largest published pre-training runs.
  if (!(r.train_tokens() >= 0 && r.train_tokens() <= 1e15)) {
    v.push_back({absl::StrCat(prefix, "train_tokens"),
                 absl::StrCat("must be in [0, 1e15]; got ", r.train_tokens())});
  }
  if (r.zero_stage() < 0 || r.zero_stage() > 3) {
    v.push_back({absl::StrCat(prefix, "zero_stage"),
                 absl::StrCat("must be 0, 1, 2 or 3; got ", r.zero_stage())});
  }
  if (r.gradient_bytes() != 0 && r.gradient_bytes() != 2 && r.gradient_bytes() != 4) {
    v.push_back({absl::StrCat(prefix, "gradient_bytes"),
                 absl::StrCat("must be 0 (= 4), 2 or 4; got ", r.gradient_bytes())});
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"dp_overlap", r.dp_overlap()},
                                     {"tp_overlap", r.tp_overlap()}}) {
    if (!(value >= 0 && value <= 1)) {
      v.push_back({absl::StrCat(prefix, name), absl::StrCat("must be in [0, 1]; got ", value)});
    }
  }
  if (!v.empty()) return InvalidArgumentWithViolations(v);
  return c;
}

v1::StepBreakdown ToProto(const StepBreakdown& b) {
  v1::StepBreakdown p;
  p.set_gpus(b.gpus);
  p.set_nodes(b.nodes);
  p.set_tensor_parallel(b.tensor_parallel);
  p.set_pipeline_parallel(b.pipeline_parallel);
  p.set_data_parallel(b.data_parallel);
  p.set_microbatches(b.microbatches);
  p.set_global_batch(b.global_batch);
  p.set_compute_s(b.compute_s);
  p.set_recompute_s(b.recompute_s);
  p.set_tp_comm_s(b.tp_comm_s);
  p.set_pp_bubble_s(b.pp_bubble_s);
  p.set_pp_comm_s(b.pp_comm_s);
  p.set_dp_comm_s(b.dp_comm_s);
  p.set_optimizer_s(b.optimizer_s);
  p.set_step_time_s(b.step_s);
  p.set_mfu(b.mfu);
  p.set_tflops_per_gpu(b.tflops_per_gpu);
  p.set_tokens_per_second_per_gpu(b.tokens_per_s_per_gpu);
  for (const std::string& a : b.assumptions) p.add_assumptions(a);
  *p.mutable_memory() = ToProto(b.memory);
  p.set_sequence_parallel(b.sequence_parallel);
  p.set_recompute(b.recompute == Recompute::kFull        ? v1::RECOMPUTE_FULL
                  : b.recompute == Recompute::kSelective ? v1::RECOMPUTE_SELECTIVE
                                                         : v1::RECOMPUTE_NONE);
  p.set_zero_stage(b.zero_stage);
  p.set_offload_activations(b.offload_activations);
  p.set_interleave(b.interleave);
  p.set_micro_batch_size(b.micro_batch_size);
  p.set_cp_comm_s(b.cp_comm_s);
  p.set_ep_comm_s(b.ep_comm_s);
  p.set_moe_host_s(b.moe_host_s);
  p.set_offload_s(b.offload_s);
  p.set_context_parallel(b.context_parallel);
  p.set_expert_parallel(b.expert_parallel);
  p.set_error_band_p10(b.band_p10);
  p.set_error_band_p90(b.band_p90);
  p.set_error_band_kind(b.band_kind);
  p.set_error_band_runs(b.band_runs);
  p.set_train_tokens(b.train_tokens);
  p.set_time_to_train_s(b.time_to_train_s);
  p.set_gpu_hours(b.gpu_hours);
  return p;
}

}  // namespace wavecrest
