#include "core/csv_fields.h"

#include <cmath>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/gpu_catalog.h"

namespace wavecrest::csv {

absl::Status LineError(absl::string_view origin, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ":", line, ": ", what));
}

absl::StatusOr<int64_t> Dim(absl::string_view origin, int line, absl::string_view field,
                            absl::string_view text, int64_t lo) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v) || v < lo || v > (int64_t{1} << 31)) {
    return LineError(origin, line,
                     absl::StrCat(field, ": \"", text, "\" is not an integer in [", lo, ", 2^31]"));
  }
  return v;
}

absl::StatusOr<double> Positive(absl::string_view origin, int line, absl::string_view field,
                                absl::string_view text) {
  double v = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &v) || !(v > 0) || !std::isfinite(v)) {
    return LineError(origin, line,
                     absl::StrCat(field, ": \"", text, "\" is not a positive number"));
  }
  return v;
}

std::vector<std::pair<int, std::vector<std::string>>> CsvRows(absl::string_view text,
                                                              std::string* header) {
  std::vector<std::pair<int, std::vector<std::string>>> rows;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripTrailingAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (header->empty()) {
      *header = std::string(line);
      continue;
    }
    rows.push_back({line_no, absl::StrSplit(line, ',')});
  }
  return rows;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(text.size()) > kMaxCsvBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", kMaxCsvBytes >> 20, " MiB"));
    }
  }
  return text;
}

absl::Status FieldCount(absl::string_view origin, int line, const std::vector<std::string>& f,
                        size_t n) {
  if (f.size() == n) return absl::OkStatus();
  return LineError(origin, line, absl::StrCat("expected ", n, " fields, got ", f.size()));
}

absl::StatusOr<std::string> GpuField(absl::string_view origin, int line, absl::string_view text) {
  std::string gpu = absl::AsciiStrToLower(text);
  if (!FindGpu(gpu).ok()) {
    return LineError(origin, line,
                     absl::StrCat("gpu: unknown \"", text, "\"; known: ", KnownGpuNames()));
  }
  return gpu;
}

absl::StatusOr<DType> DTypeField(absl::string_view origin, int line, absl::string_view text) {
  absl::StatusOr<DType> dtype = ParseDType(text);
  if (!dtype.ok()) return LineError(origin, line, dtype.status().message());
  return *dtype;
}

}  // namespace wavecrest::csv
