// Reading the measurement CSVs (core/calibration.h, core/attention_calibration.h): rows with their
// line numbers, and fields checked with errors that name the file, the line and the field.
#ifndef WAVECREST_CORE_CSV_FIELDS_H_
#define WAVECREST_CORE_CSV_FIELDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest::csv {

inline constexpr int64_t kMaxCsvBytes = 64 << 20;

// INVALID_ARGUMENT "origin:line: what".
absl::Status LineError(absl::string_view origin, int line, absl::string_view what);
// An integer in [lo, 2^31].
absl::StatusOr<int64_t> Dim(absl::string_view origin, int line, absl::string_view field,
                            absl::string_view text, int64_t lo);
// A finite number > 0.
absl::StatusOr<double> Positive(absl::string_view origin, int line, absl::string_view field,
                                absl::string_view text);
// The data rows (line number, fields), skipping blank and '#' lines; the first other line is the
// header.
std::vector<std::pair<int, std::vector<std::string>>> CsvRows(absl::string_view text,
                                                              std::string* header);
// Exactly `n` fields.
absl::Status FieldCount(absl::string_view origin, int line, const std::vector<std::string>& f,
                        size_t n);
// A GPU of the catalog (its name, lower-cased).
absl::StatusOr<std::string> GpuField(absl::string_view origin, int line, absl::string_view text);
// A dtype name.
absl::StatusOr<DType> DTypeField(absl::string_view origin, int line, absl::string_view text);
// A file of at most kMaxCsvBytes.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path);

}  // namespace wavecrest::csv

#endif  // WAVECREST_CORE_CSV_FIELDS_H_
