#include "service/spec_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/hf_export.h"
#include "core/hf_import.h"
#include "core/json_limits.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {

namespace {

// Protobuf's JSON parser says `(mlp): invalid value "swiglu" for type
// type.googleapis.com/wavecrest.v1.Mlp`; say which values are allowed instead.
std::string ExplainJsonError(const std::string& message) {
  static const std::regex kBadEnum(
      R"re(\(([\w.]+)\): invalid value ("[^"]*") for type [\w.]*/([\w.]+))re");
  std::smatch m;
  if (!std::regex_search(message, m, kBadEnum)) return message;
  const google::protobuf::EnumDescriptor* e =
      google::protobuf::DescriptorPool::generated_pool()->FindEnumTypeByName(m[3].str());
  if (e == nullptr) return message;
  std::vector<std::string> allowed;
  for (int i = 0; i < e->value_count(); ++i) {
    if (!absl::EndsWith(e->value(i)->name(), "_UNSPECIFIED"))
      allowed.push_back(e->value(i)->name());
  }
  return absl::StrCat(m[1].str(), ": invalid value ", m[2].str(),
                      "; allowed: ", absl::StrJoin(allowed, ", "));
}

// A Hugging Face config's kind: its "model_type", else its first architecture ("" if neither).
std::string HfKind(absl::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return "";
  if (auto t = j.find("model_type"); t != j.end() && t->is_string()) return t->get<std::string>();
  if (auto a = j.find("architectures");
      a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string()) {
    return (*a)[0].get<std::string>();
  }
  return "";
}

absl::StatusOr<v1::ModelSpec> ParseEitherFormat(absl::string_view text) {
  if (absl::Status st = CheckJsonLimits(text); !st.ok()) return st;
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
    return absl::InvalidArgumentError(
        absl::StrCat("model spec JSON: ", ExplainJsonError(std::string(st.message()))));
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::ModelSpec> ParseModelJson(absl::string_view text, const std::string& source) {
  absl::StatusOr<v1::ModelSpec> spec = ParseEitherFormat(text);
  if (spec.ok() && spec->name().empty()) {
    spec->set_name(!source.empty()            ? ModelNameFromPath(source)
                   : LooksLikeHfConfig(text) ? HfKind(text)
                                             : "");
  }
  return spec;
}


absl::Status ResolveHfConfig(const std::string& hf_config_json, v1::ModelSpec* model) {
  if (static_cast<int64_t>(hf_config_json.size()) > kMaxHfConfigBytes) {
    return FieldError("hf_config_json", absl::StrCat(hf_config_json.size(), " bytes; at most ",
                                                     kMaxHfConfigBytes, " allowed"));
  }
  if (absl::Status st = CheckJsonLimits(hf_config_json); !st.ok()) {
    return FieldError("hf_config_json", st.message());
  }
  if (!LooksLikeHfConfig(hf_config_json)) {
    return FieldError("hf_config_json",
                      "not a Hugging Face config.json (it has neither \"model_type\" nor "
                      "\"architectures\"); a wavecrest spec goes in `model`");
  }
  absl::StatusOr<ModelSpec> imported = ImportHfConfig(hf_config_json);
  if (!imported.ok()) return FieldError("hf_config_json", imported.status().message());
  v1::ModelSpec spec = ToProto(*imported);
  spec.MergeFrom(*model);  // what the caller set in `model` wins
  *model = std::move(spec);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes) {
  // Look before opening: opening a FIFO blocks, and a device or a directory has no size to trust.
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory; give a spec file (e.g. examples/models/*.json)"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file (a pipe, socket or device); give a spec file"));
  }
  if (st.st_size > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", st.st_size, " bytes; at most ", max_bytes, " allowed"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  // Never read more than the limit, whatever the file does after stat.
  std::string text(static_cast<size_t>(max_bytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (static_cast<int64_t>(text.size()) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": more than ", max_bytes, " bytes; at most ", max_bytes, " allowed"));
  }
  return text;
}

std::string ModelNameFromPath(const std::string& path) {
  const std::filesystem::path p(path);
  std::string stem = p.stem().string();
  // A Hugging Face checkout: ".../Meta-Llama-3-8B/config.json" is "Meta-Llama-3-8B".
  if (stem == "config" && p.has_parent_path()) {
    const std::string dir = p.parent_path().filename().string();
    if (!dir.empty() && dir != "." && dir != "..") stem = dir;
  }
  return stem;
}

absl::StatusOr<v1::ModelSpec> LoadModelFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path, kMaxSpecFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<v1::ModelSpec> spec = ParseModelJson(*text, path);
  if (!spec.ok()) {
    return absl::Status(spec.status().code(), absl::StrCat(path, ": ", spec.status().message()));
  }
  return spec;
}

absl::StatusOr<std::string> ExportModel(const v1::ModelSpec& model, absl::string_view format,
                                        absl::string_view base_config_json,
                                        std::vector<std::string>* changed) {
  if (format == "wavecrest") {
    std::string out;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    options.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(model, &out, options);
    return out;
  }
  if (format != "hf") {
    return FieldError("format", absl::StrCat("unknown \"", format, "\"; allowed: hf, wavecrest"));
  }
  std::vector<FieldViolation> violations;
  ModelSpec spec = FromProto(model, &violations);
  if (violations.empty()) violations = Validate(WithDefaults(spec));
  if (!violations.empty()) return ViolationsToStatus(violations, "model.");
  if (base_config_json.empty()) return ExportHfConfig(WithDefaults(spec));
  std::vector<std::string> fields;
  absl::StatusOr<std::string> text =
      ExportHfConfigOver(WithDefaults(spec), base_config_json, &fields);
  if (!text.ok() && text.status().code() == absl::StatusCode::kInvalidArgument) {
    return FieldError("base_config_json", text.status().message());
  }
  if (changed != nullptr) *changed = std::move(fields);
  return text;
}

std::vector<std::string> ModelFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const char* sub : {"", "hf"}) {
    const std::filesystem::path folder = std::filesystem::path(dir) / sub;
    const auto folder_status = std::filesystem::symlink_status(folder, ec);
    if (ec || !std::filesystem::is_directory(folder_status)) continue;  // a linked "hf" too
    for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
      // symlink_status: the entry itself, never what a link points at.
      if (!std::filesystem::is_regular_file(e.symlink_status(ec)) || ec) continue;
      if (e.path().extension() != ".json") continue;
      out.push_back(std::filesystem::relative(e.path(), dir, ec).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace wavecrest
