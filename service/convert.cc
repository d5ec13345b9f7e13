// Conversions of the enums, GEMMs, memory, the catalog and predictions' provenance; the model
// spec, layers and runs are converted in convert_model.cc, convert_layers.cc and convert_run.cc.
#include "service/convert.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
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
  p.set_host_capacity_bytes(m.host_capacity_bytes);
  p.set_gathered_bytes(m.gathered_bytes);
  p.set_stored_bytes_per_layer(m.stored_bytes_per_layer);
  p.set_stage(m.stage);
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

}  // namespace wavecrest
