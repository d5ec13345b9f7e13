// The Advisor's request handling that needs no gRPC machinery: validation and the answer of each
// RPC from its request. The server calls it; the CLI calls it in-process for offline use.
#ifndef WAVECREST_SERVICE_ADVISOR_LOGIC_H_
#define WAVECREST_SERVICE_ADVISOR_LOGIC_H_

#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "core/model_spec.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// Converts and validates a request's model spec; every violation is reported with its field path
// under `prefix` ("model."). Returns the normalized spec.
absl::StatusOr<ModelSpec> SpecFromRequest(const v1::ModelSpec& p, absl::string_view prefix);

// The description of a missing GPU field: what to give, and the known names.
std::string GpuRequired();

// Looks up a catalogued GPU by a request's field; INVALID_ARGUMENT when empty, NOT_FOUND listing
// the known names when unknown.
absl::StatusOr<const GpuSpec*> CatalogGpuFromRequest(absl::string_view name,
                                                     absl::string_view field);

// A GPU measurement of a whole layer on a catalogued GPU's kind, if one is known (the server's
// measurement store); nullopt otherwise.
using MeasuredLayerLookup =
    std::function<std::optional<v1::LayerTiming>(const GpuSpec& gpu, const LayerKey& key)>;

// Analyze: INVALID_ARGUMENT (with field violations), NOT_FOUND, FAILED_PRECONDITION or the answer.
// A request's hf_config_json is imported first. With `lookup` and a measurement of the model's whole layer, measured_step is filled.
absl::StatusOr<v1::AnalyzeResponse> HandleAnalyze(const v1::AnalyzeRequest& request,
                                                  const MeasuredLayerLookup& lookup = nullptr);

// The catalog part of ListDevices.
v1::ListDevicesResponse CatalogDevices();

// ParseModel: the text (at most kMaxSpecFileBytes, JSON within core/json_limits.h's limits) as a
// ModelSpec, validated as every call validates a model. INVALID_ARGUMENT on field "text" (or the
// model's own fields, under "model.").
absl::StatusOr<v1::ParseModelResponse> HandleParseModel(const v1::ParseModelRequest& request);

// ExportModel: the model in `format` (service/spec_io.h ExportModel), drop-in over
// base_config_json when given.
absl::StatusOr<v1::ExportModelResponse> HandleExportModel(const v1::ExportModelRequest& request);

// ListModels: the model files in `models_dir` (service/spec_io.h ModelFilesIn) that parse; an
// empty list when `models_dir` is empty.
v1::ListModelsResponse HandleListModels(const std::string& models_dir);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_ADVISOR_LOGIC_H_
