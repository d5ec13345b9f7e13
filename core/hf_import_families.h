// The importers of the families beside the Llama line (core/hf_import_families.cc), each reading
// one config (the text model's, for a multimodal one) into `s`. Internal to wavecrest_core.
#ifndef WAVECREST_CORE_HF_IMPORT_FAMILIES_H_
#define WAVECREST_CORE_HF_IMPORT_FAMILIES_H_

#include "absl/status/statusor.h"
#include "core/model_spec.h"
#include "nlohmann/json.hpp"

namespace wavecrest::hf {

absl::StatusOr<ModelSpec> ImportBloom(const nlohmann::json& j, ModelSpec s);
absl::StatusOr<ModelSpec> ImportGptj(const nlohmann::json& j, ModelSpec s);
absl::StatusOr<ModelSpec> ImportMpt(const nlohmann::json& j, ModelSpec s);
absl::StatusOr<ModelSpec> ImportDbrx(const nlohmann::json& j, ModelSpec s);
absl::StatusOr<ModelSpec> ImportStarcoder2(const nlohmann::json& j, ModelSpec s);
absl::StatusOr<ModelSpec> ImportInternLm2(const nlohmann::json& j, ModelSpec s);
// OLMo 2 (moe false) and OLMoE (moe true).
absl::StatusOr<ModelSpec> ImportOlmo(const nlohmann::json& j, bool moe, ModelSpec s);
absl::StatusOr<ModelSpec> ImportPhimoe(const nlohmann::json& j, ModelSpec s);
// Granite (moe false), Granite-MoE and Granite-MoE-Shared (moe true).
absl::StatusOr<ModelSpec> ImportGranite(const nlohmann::json& j, bool moe, ModelSpec s);
// Nemotron-H, Nemotron Nano 2 and Nemotron 3: hybrid Mamba-2 / attention / MLP / MoE layers.
absl::StatusOr<ModelSpec> ImportNemotronH(const nlohmann::json& j, ModelSpec s);

}  // namespace wavecrest::hf

#endif  // WAVECREST_CORE_HF_IMPORT_FAMILIES_H_
