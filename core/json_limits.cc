#include "core/json_limits.h"

#include "absl/strings/str_cat.h"

namespace wavecrest {
namespace {

// CheckJsonLimits's scan, one byte at a time: the nesting depth, a bound on the values, and the
// string it is in (if any) with the bytes of it so far.
class JsonLimitScan {
 public:
  explicit JsonLimitScan(const JsonLimits& limits) : limits_(limits) {}

  // Takes the byte `c` at `offset`: OK, or INVALID_ARGUMENT naming the limit the text passes.
  absl::Status Take(char c, size_t offset) {
    return in_string_ ? StringByte(c) : OutsideString(c, offset);
  }

 private:
  // A byte inside a string: an escape, the closing quote, or one more byte of it.
  absl::Status StringByte(char c) {
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
      return absl::OkStatus();
    }
    if (++string_bytes_ > limits_.max_string_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("JSON has a string longer than ", limits_.max_string_bytes, " bytes"));
    }
    return absl::OkStatus();
  }

  // A byte outside strings: one that opens a string, nests, closes or separates values counts.
  absl::Status OutsideString(char c, size_t offset) {
    switch (c) {
      case '"':
        in_string_ = true;
        string_bytes_ = 0;
        break;
      case '\'':
        // Strict JSON has no single-quoted strings, but protobuf's JSON parser takes them: left
        // to it, a '"' inside one would hide everything after it from these counts.
        return absl::InvalidArgumentError(absl::StrCat(
            "not JSON: a single quote at byte ", offset,
            " outside a string (JSON strings are in double quotes)"));
      case '[':
      case '{':
        if (++depth_ > limits_.max_depth) {
          return absl::InvalidArgumentError(
              absl::StrCat("JSON nests arrays or objects deeper than ", limits_.max_depth,
                           " levels; a model spec or config.json needs 3"));
        }
        ++values_;
        break;
      case ']':
      case '}':
        --depth_;
        break;
      case ',':
        ++values_;
        break;
      default:
        return absl::OkStatus();
    }
    if (values_ > limits_.max_values) {
      return absl::InvalidArgumentError(
          absl::StrCat("JSON has more than ", limits_.max_values, " values"));
    }
    return absl::OkStatus();
  }

  const JsonLimits& limits_;
  int depth_ = 0;
  // Every value but the first follows a ',' or opens after '[' / ':'; counting commas and
  // openings bounds the values from above without parsing.
  int64_t values_ = 1;
  bool in_string_ = false, escaped_ = false;
  int64_t string_bytes_ = 0;
};

}  // namespace

absl::Status CheckJsonLimits(absl::string_view text, const JsonLimits& limits) {
  JsonLimitScan scan(limits);
  for (size_t offset = 0; offset < text.size(); ++offset) {
    if (absl::Status st = scan.Take(text[offset], offset); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
