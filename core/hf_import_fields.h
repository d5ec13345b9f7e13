// The field readers of the Hugging Face config import (core/hf_import.cc and the families in
// core/hf_import_families.cc): typed reads that name the field in their errors, and the pieces
// several families share. Internal to wavecrest_core (it exposes nlohmann::json).
#ifndef WAVECREST_CORE_HF_IMPORT_FIELDS_H_
#define WAVECREST_CORE_HF_IMPORT_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model_spec.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace wavecrest::hf {

using nlohmann::json;

// An integer field; `fallback` when absent or null, else INVALID_ARGUMENT naming the field.
absl::StatusOr<int64_t> GetInt(const json& j, const char* key, std::optional<int64_t> fallback);

// A size that must be at least 1 when given: "config.json: num_key_value_heads: must be at least
// 1; got 0" (a 0 would otherwise read as the spec's "use the default").
absl::StatusOr<int64_t> GetPositive(const json& j, const char* key,
                                    std::optional<int64_t> fallback);

// A number (integer or not), `fallback` when absent or null.
absl::StatusOr<double> GetNumber(const json& j, const char* key, std::optional<double> fallback);

absl::StatusOr<bool> GetBool(const json& j, const char* key, bool fallback);

// A string field, `fallback` when absent or null.
absl::StatusOr<std::string> GetString(const json& j, const char* key, const char* fallback);

// The first of `keys` the object has (configs of one family spell a field several ways), or the
// first key when none is there (so that a missing field is named as the family's class spells it).
const char* FirstKey(const json& j, std::initializer_list<const char*> keys);

// The fields every Llama-style config has (with per-family defaults where configs leave them
// out: Gemma 3's text_config), read into `s`, and the gated MLP and RMSNorm they share.
struct Defaults {
  std::optional<int64_t> heads, kv_heads, head_dim, vocab;
};
absl::Status ReadLlamaCore(const json& j, ModelSpec& s, const Defaults& d = {});

// Layers with local attention, from "layer_types" (["sliding_attention", "full_attention", ...])
// or, failing that, a pattern of `pattern` layers whose last is global (Gemma 3's
// sliding_window_pattern); the window from "sliding_window". Nothing when the config has no
// window or `use_sliding_window` is false (Qwen2/3 keep a window they do not use).
absl::Status ReadSlidingWindow(const json& j, ModelSpec& s, int64_t pattern = 0);

}  // namespace wavecrest::hf

#endif  // WAVECREST_CORE_HF_IMPORT_FIELDS_H_
