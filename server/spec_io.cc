#include "server/spec_io.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/hf_import.h"
#include "google/protobuf/util/json_util.h"
#include "server/convert.h"

namespace wavecrest {

absl::StatusOr<v1::ModelSpec> ParseModelJson(absl::string_view text) {
  if (LooksLikeHfConfig(text)) {
    absl::StatusOr<ModelSpec> spec = ImportHfConfig(text);
    if (!spec.ok()) return spec.status();
    return ToProto(*spec);
  }
  v1::ModelSpec out;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(text), &out, options);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model spec JSON: ", std::string(st.message())));
  }
  return out;
}

absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  if (size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", size, " bytes; at most ", max_bytes, " allowed"));
  }
  in.seekg(0, std::ios::beg);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<v1::ModelSpec> LoadModelFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path, kMaxSpecFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<v1::ModelSpec> spec = ParseModelJson(*text);
  if (!spec.ok()) {
    return absl::Status(spec.status().code(), absl::StrCat(path, ": ", spec.status().message()));
  }
  return spec;
}

}  // namespace wavecrest
