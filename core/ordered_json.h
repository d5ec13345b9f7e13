// JSON parsed into nlohmann::ordered_json (keys in the order the text has them) in linear time.
//
// ordered_json's own parse looks every new key up in its object by a linear search, so an object
// of n keys costs n^2/2 comparisons: a 990 KB config.json of one wide object took 21 s of CPU in
// an ExportModel call. This builds the same document with each object's keys indexed by a hash
// table while it is parsed; a key sent twice keeps its first place and its last value, as
// ordered_json's parse does.
#ifndef WAVECREST_CORE_ORDERED_JSON_H_
#define WAVECREST_CORE_ORDERED_JSON_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace wavecrest {

// INVALID_ARGUMENT with the parser's message when `text` is not JSON.
absl::StatusOr<nlohmann::ordered_json> ParseOrderedJson(absl::string_view text);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_ORDERED_JSON_H_
