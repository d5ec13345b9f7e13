// libFuzzer target: the Hugging Face config importer and the spec validation after it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/gemm.h"
#include "core/hf_import.h"
#include "core/model_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)wavecrest::LooksLikeHfConfig(text);
  absl::StatusOr<wavecrest::ModelSpec> spec = wavecrest::ImportHfConfig(text);
  if (!spec.ok()) return 0;
  absl::StatusOr<wavecrest::ModelSpec> n = wavecrest::NormalizeSpec(*spec);
  if (!n.ok()) return 0;
  (void)wavecrest::CountParams(*n);
  (void)wavecrest::BuildGemms(*n);
  return 0;
}
