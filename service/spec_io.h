// Reading model specs from files: wavecrest JSON (the proto JSON mapping of wavecrest.v1.ModelSpec)
// or a Hugging Face config.json, told apart by content.
#ifndef WAVECREST_SERVICE_SPEC_IO_H_
#define WAVECREST_SERVICE_SPEC_IO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wavecrest/v1/model.pb.h"

namespace wavecrest {

inline constexpr int64_t kMaxSpecFileBytes = int64_t{4} << 20;

// Parses either format. INVALID_ARGUMENT says what is wrong (bad JSON, unknown field, unsupported
// architecture, missing field). A model that names nothing itself ("name", a config's
// "_name_or_path") is named after `source`, the file the text came from (ModelNameFromPath), or
// without one, a Hugging Face config after its "model_type" (else its architecture).
absl::StatusOr<v1::ModelSpec> ParseModelJson(absl::string_view text,
                                             const std::string& source = "");

// The name a model file gives a config that names nothing itself: the file's stem, or for a
// Hugging Face "config.json" the directory it is in.
std::string ModelNameFromPath(const std::string& path);

// Reads and parses a file of at most kMaxSpecFileBytes. NOT_FOUND when it cannot be read.
absl::StatusOr<v1::ModelSpec> LoadModelFile(const std::string& path);

// A model in another team's terms: format "hf" is a Hugging Face config.json (core/hf_export.h:
// FAILED_PRECONDITION naming the field no architecture expresses), "wavecrest" the spec's JSON
// mapping (the fields set). INVALID_ARGUMENT for a spec that does not validate or an unknown
// format. With `base_config_json` (format "hf"), the config is that file with only the changed
// shape fields rewritten (core/hf_export.h ExportHfConfigOver), listed in `changed`.
absl::StatusOr<std::string> ExportModel(const v1::ModelSpec& model, absl::string_view format,
                                        absl::string_view base_config_json = "",
                                        std::vector<std::string>* changed = nullptr);

// The model files a models directory offers: "*.json" in it and in its "hf" folder, as paths
// relative to it, sorted. Only regular files reached without a symlink: a link in the directory
// (to a file outside it, say) is not followed.
std::vector<std::string> ModelFilesIn(const std::string& dir);

inline constexpr int64_t kMaxHfConfigBytes = int64_t{1} << 20;

// A request's `hf_config_json`, imported: the fields set in `model` override the imported ones,
// and the result replaces `model` (hf_config_json is cleared). Nothing to do when it is empty.
// INVALID_ARGUMENT on field "hf_config_json" when it is too long, not a Hugging Face config, or
// not importable (the importer's message says which field).
absl::Status ResolveHfConfig(const std::string& hf_config_json, v1::ModelSpec* model);

// The same for any request with `model` and `hf_config_json` fields.
template <typename Request>
absl::Status ResolveHfConfig(Request* request) {
  if (request->hf_config_json().empty()) return absl::OkStatus();
  absl::Status st = ResolveHfConfig(request->hf_config_json(), request->mutable_model());
  if (st.ok()) request->clear_hf_config_json();
  return st;
}

// Reads a whole file of at most `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_SPEC_IO_H_
