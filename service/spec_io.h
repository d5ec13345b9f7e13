// Reading model specs from files: wavecrest JSON (the proto JSON mapping of wavecrest.v1.ModelSpec)
// or a Hugging Face config.json, told apart by content.
#ifndef WAVECREST_SERVICE_SPEC_IO_H_
#define WAVECREST_SERVICE_SPEC_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wavecrest/v1/model.pb.h"

namespace wavecrest {

inline constexpr int64_t kMaxSpecFileBytes = int64_t{4} << 20;

// Parses either format. INVALID_ARGUMENT says what is wrong (bad JSON, unknown field, unsupported
// architecture, missing field).
absl::StatusOr<v1::ModelSpec> ParseModelJson(absl::string_view text);

// Reads and parses a file of at most kMaxSpecFileBytes. NOT_FOUND when it cannot be read.
absl::StatusOr<v1::ModelSpec> LoadModelFile(const std::string& path);

// Reads a whole file of at most `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path, int64_t max_bytes);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_SPEC_IO_H_
