// Layers between their protos and core/layers.h: the kind, a layer to time (validated), and a
// layer's timing with the analytic model's sum of its parts.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"
#include "core/moe_routing.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {

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

}  // namespace wavecrest
