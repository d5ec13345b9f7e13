// Conversions between core types and wavecrest.v1 protos. Nothing else in the code base knows both.
#ifndef WAVECREST_SERVICE_CONVERT_H_
#define WAVECREST_SERVICE_CONVERT_H_

#include <vector>

#include "core/analysis.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "core/memory.h"
#include "core/model_spec.h"
#include "core/parallelism.h"
#include "core/recommend.h"
#include "wavecrest/v1/advisor.pb.h"
#include "wavecrest/v1/model.pb.h"

namespace wavecrest {

// Proto -> core. UNSPECIFIED enums take the documented defaults; an enum number the proto does not
// define is a violation (appended to `violations`, field names relative to the message).
ModelSpec FromProto(const v1::ModelSpec& p, std::vector<FieldViolation>* violations);
v1::ModelSpec ToProto(const ModelSpec& s);

absl::StatusOr<DType> FromProto(v1::Dtype d);
v1::Dtype ToProto(DType d);
absl::StatusOr<Layout> FromProto(v1::Layout l);
v1::Layout ToProto(Layout l);
v1::Pass ToProto(Pass p);
v1::Attention ToProto(Attention a);
v1::Workload ToProto(Workload w);
v1::Bound ToProto(Bound b);
v1::Knob ToProto(Knob k);
absl::StatusOr<Knob> FromProto(v1::Knob k);

v1::GemmShape ToProto(const GemmShape& s);
v1::MemoryEstimate ToProto(const MemoryEstimate& m);
// A GemmTiming with the key's shape, layout and dtype set (the rest for the caller to fill).
v1::GemmTiming TimingOf(const GemmKey& key);
v1::GemmReport ToProto(const Gemm& g);
v1::ParameterCounts ToProto(const ParamCounts& c);
v1::CatalogGpu ToProto(const GpuSpec& g);
v1::TileChoice ToProto(const GemmPrediction& p);

// Provenance of a prediction by the analytic model for a catalogued GPU.
// "wavecrest-analytic-v7 of cuBLASLt 13.1 (through PyTorch 2.11) (<calibration label>)": the
// method string of a prediction, naming the library whose kernels it models.
std::string PredictedMethod(const GpuSpec& gpu, DType dtype);
// A prediction's provenance: model, calibration and (for time_s > 0) the error band.
v1::Provenance PredictedProvenance(const GpuSpec& gpu, DType dtype, double time_s);

absl::StatusOr<LayerKind> FromProto(v1::LayerKind k);
v1::LayerKind ToProto(LayerKind k);
// A layer to time, validated (field names under `field`, e.g. "layers[2]"): the model is
// normalized and its layer derived (a full model is accepted; see core/layers.h).
absl::StatusOr<LayerKey> LayerKeyFromProto(const v1::LayerShape& shape, absl::string_view field);
v1::LayerShape ToProto(const LayerKey& key);
// A LayerTiming with the key's shape, key string, FLOPs and the analytic sum of its parts set
// (predicted_sum_s, predicted_elementwise_s); time and provenance for the caller to fill.
v1::LayerTiming LayerTimingOf(const GpuSpec& gpu, const LayerKey& key);
// The analytic model's answer for a layer: LayerTimingOf with time_s = the predicted sum,
// provenance PREDICTED with the layer's error band.
v1::LayerTiming PredictedLayerTiming(const GpuSpec& gpu, const LayerKey& key);

// The Analyze response for an analysis.
v1::AnalyzeResponse ToProto(const Analysis& a);

// A run's layout (INVALID_ARGUMENT naming `prefix` + the field for an unknown recomputation or
// an overlap outside [0, 1]) and its step's breakdown.
absl::StatusOr<RunConfig> FromProto(const v1::RunConfig& r, absl::string_view prefix);
v1::StepBreakdown ToProto(const StepBreakdown& b);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_CONVERT_H_
