#include "core/hf_import_fields.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace wavecrest::hf {

absl::StatusOr<int64_t> GetInt(const json& j, const char* key, std::optional<int64_t> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return absl::InvalidArgumentError(absl::StrCat("config.json: missing field \"", key, "\""));
  }
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: field \"", key, "\" must be an integer; got ", it->type_name()));
  }
  return it->get<int64_t>();
}

absl::StatusOr<int64_t> GetPositive(const json& j, const char* key,
                                    std::optional<int64_t> fallback) {
  absl::StatusOr<int64_t> v = GetInt(j, key, fallback);
  if (v.ok() && *v < 1 && j.contains(key) && !j[key].is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: ", key, ": must be at least 1; got ", *v));
  }
  return v;
}

absl::StatusOr<double> GetNumber(const json& j, const char* key, std::optional<double> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return absl::InvalidArgumentError(absl::StrCat("config.json: missing field \"", key, "\""));
  }
  if (!it->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: field \"", key, "\" must be a number; got ", it->type_name()));
  }
  return it->get<double>();
}

absl::StatusOr<bool> GetBool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: field \"", key, "\" must be true or false; got ", it->type_name()));
  }
  return it->get<bool>();
}

absl::StatusOr<std::string> GetString(const json& j, const char* key, const char* fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string(fallback);
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: field \"", key, "\" must be a string; got ", it->type_name()));
  }
  return it->get<std::string>();
}

const char* FirstKey(const json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (j.contains(k)) return k;
  }
  return *keys.begin();
}

absl::Status ReadLlamaCore(const json& j, ModelSpec& s, const Defaults& d) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "hidden_size", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "num_attention_heads", d.heads));
  ASSIGN_OR_RETURN(s.num_kv_heads, GetPositive(j, "num_key_value_heads",
                                               d.kv_heads ? d.kv_heads : s.num_attention_heads));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "num_hidden_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "intermediate_size", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", d.vocab));
  ASSIGN_OR_RETURN(s.head_dim, GetPositive(j, "head_dim", d.head_dim ? *d.head_dim : 0));
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  return absl::OkStatus();
}

absl::Status ReadSlidingWindow(const json& j, ModelSpec& s, int64_t pattern) {
  bool used = true;
  ASSIGN_OR_RETURN(used, GetBool(j, "use_sliding_window", true));
  int64_t window = 0;
  ASSIGN_OR_RETURN(window, GetInt(j, "sliding_window", 0));
  if (!used || window <= 0) return absl::OkStatus();
  int64_t layers = s.num_layers;  // Mistral: every layer
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array()) {
    if (static_cast<int64_t>(lt->size()) != s.num_layers) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: layer_types: must name each of the ", s.num_layers,
                       " layers (num_hidden_layers); got ", lt->size()));
    }
    layers = 0;
    for (const json& t : *lt) {
      layers += t.is_string() && t.get_ref<const std::string&>() == "sliding_attention";
    }
  } else {
    ASSIGN_OR_RETURN(pattern, GetInt(j, "sliding_window_pattern", pattern));
    if (pattern > 1 && s.num_layers > 0) layers = s.num_layers - s.num_layers / pattern;
  }
  if (layers > 0) {
    s.sliding_window = window;
    s.sliding_window_layers = layers;
  }
  return absl::OkStatus();
}

}  // namespace wavecrest::hf
