#include "service/advisor_logic.h"

#include "core/analysis.h"
#include "core/status_macros.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {

namespace {

// Converts, fills defaults and validates; appends violations (with `prefix`) to `all`.
ModelSpec ConvertAndCheck(const v1::ModelSpec& p, absl::string_view prefix,
                          std::vector<FieldViolation>* all) {
  std::vector<FieldViolation> violations;
  ModelSpec spec = WithDefaults(FromProto(p, &violations));
  for (FieldViolation& v : Validate(spec)) violations.push_back(std::move(v));
  for (FieldViolation& v : violations) {
    all->push_back({std::string(prefix) + v.field, std::move(v.description)});
  }
  return spec;
}

}  // namespace

std::string GpuRequired() {
  return "required: a GPU name such as h100-sxm (known: " + KnownGpuNames() + ")";
}

absl::StatusOr<ModelSpec> SpecFromRequest(const v1::ModelSpec& p, absl::string_view prefix) {
  std::vector<FieldViolation> violations;
  ModelSpec spec = ConvertAndCheck(p, prefix, &violations);
  if (!violations.empty()) return InvalidArgumentWithViolations(violations);
  return spec;
}

absl::StatusOr<const GpuSpec*> CatalogGpuFromRequest(absl::string_view name,
                                                     absl::string_view field) {
  if (name.empty()) {
    return FieldError(field, GpuRequired());
  }
  return FindGpu(name);
}

absl::StatusOr<v1::AnalyzeResponse> HandleAnalyze(const v1::AnalyzeRequest& request) {
  std::vector<FieldViolation> all;
  ModelSpec spec = ConvertAndCheck(request.model(), "model.", &all);
  if (request.gpu().empty()) all.push_back({"gpu", GpuRequired()});
  if (!all.empty()) return InvalidArgumentWithViolations(all);
  ASSIGN_OR_RETURN(const GpuSpec* gpu, FindGpu(request.gpu()));
  ASSIGN_OR_RETURN(Analysis analysis, Analyze(spec, *gpu));
  return ToProto(analysis);
}

v1::ListDevicesResponse CatalogDevices() {
  v1::ListDevicesResponse r;
  for (const GpuSpec& g : GpuCatalog()) *r.add_catalog() = ToProto(g);
  return r;
}

}  // namespace wavecrest
