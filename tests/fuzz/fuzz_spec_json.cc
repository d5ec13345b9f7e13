// libFuzzer target: the model-spec loader (wavecrest JSON or a Hugging Face config.json), then
// validation, the GEMM mapping and the analysis of whatever is valid.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/analysis.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<wavecrest::v1::ModelSpec> spec = wavecrest::ParseModelJson(text);
  if (!spec.ok()) return 0;
  absl::StatusOr<wavecrest::ModelSpec> core = wavecrest::SpecFromRequest(*spec, "model.");
  if (!core.ok()) return 0;
  wavecrest::v1::AnalyzeRequest request;
  *request.mutable_model() = *spec;
  request.set_gpu("h100-sxm");
  (void)wavecrest::HandleAnalyze(request);
  return 0;
}
