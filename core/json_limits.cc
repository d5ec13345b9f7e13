#include "core/json_limits.h"

#include "absl/strings/str_cat.h"

namespace wavecrest {

absl::Status CheckJsonLimits(absl::string_view text, const JsonLimits& limits) {
  int depth = 0;
  // Every value but the first follows a ',' or opens after '[' / ':'; counting commas and
  // openings bounds the values from above without parsing.
  int64_t values = 1;
  bool in_string = false, escaped = false;
  int64_t string_bytes = 0;
  for (size_t offset = 0; offset < text.size(); ++offset) {
    const char c = text[offset];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        continue;
      }
      if (++string_bytes > limits.max_string_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "JSON has a string longer than ", limits.max_string_bytes, " bytes"));
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        string_bytes = 0;
        break;
      case '\'':
        // Strict JSON has no single-quoted strings, but protobuf's JSON parser takes them: left
        // to it, a '"' inside one would hide everything after it from these counts.
        return absl::InvalidArgumentError(absl::StrCat(
            "not JSON: a single quote at byte ", offset,
            " outside a string (JSON strings are in double quotes)"));
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return absl::InvalidArgumentError(
              absl::StrCat("JSON nests arrays or objects deeper than ", limits.max_depth,
                           " levels; a model spec or config.json needs 3"));
        }
        ++values;
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        ++values;
        break;
      default:
        continue;
    }
    if (values > limits.max_values) {
      return absl::InvalidArgumentError(
          absl::StrCat("JSON has more than ", limits.max_values, " values"));
    }
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
