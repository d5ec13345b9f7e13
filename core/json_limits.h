// Limits on JSON text, checked on the bytes before anything parses or prints them: how deep
// arrays and objects nest, how many values there are, how long one string is. A recursive parser
// or printer (protobuf's, nlohmann's dump) would exhaust the stack on deep nesting, and a parsed
// document costs tens of bytes per value, so both are bounded before the work starts.
#ifndef WAVECREST_CORE_JSON_LIMITS_H_
#define WAVECREST_CORE_JSON_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace wavecrest {

struct JsonLimits {
  // A model spec or a config.json nests 3 deep; requests with lists of GEMMs or layers 4.
  int max_depth = 32;
  // Values (numbers, strings, arrays, objects) in the whole text. The largest request the API
  // takes is 4096 GEMMs of 7 fields (~33k values); a config.json has a few hundred.
  int64_t max_values = 100'000;
  // Bytes of one string, key or value, as written (escapes count as written).
  int64_t max_string_bytes = 1 << 20;
};

// OK, or INVALID_ARGUMENT saying which limit the text passes (and the limit). Malformed JSON is
// left to the parser: this only bounds the work it will do, but for single-quoted strings, which
// protobuf's parser takes and strict JSON does not: they are refused here, so that what this
// counts as a string is what every parser behind it reads as one. Linear in the text, no
// allocation.
absl::Status CheckJsonLimits(absl::string_view json_text, const JsonLimits& limits = {});

}  // namespace wavecrest

#endif  // WAVECREST_CORE_JSON_LIMITS_H_
