// What the CLI's commands share: the client for --server, failures as exit codes, the --gemm and
// --mode flags, the progress bar, and the measurement files the offline tools read and write.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "client/format.h"
#include "core/status_macros.h"
#include "service/errors.h"
#include "service/text.h"

namespace wavecrest {
namespace cli {

AdvisorClient ClientFor(const CliOptions& o) {
  return AdvisorClient(o.server, absl::Seconds(EffectiveDeadline(o)),
                       {{o.tls_cert, o.tls_key, o.tls_ca}, o.token});
}

int Fail(std::ostream& err, const absl::Status& status) {
  err << "wavecrest: " << FormatError(status) << "\n";
  // A problem with the command line itself (a violation naming a --flag) is a usage error: 2.
  const std::vector<FieldViolation> v = ViolationsOf(status);
  if (status.code() == absl::StatusCode::kInvalidArgument && !v.empty() &&
      std::all_of(v.begin(), v.end(),
                  [](const FieldViolation& f) { return absl::StartsWith(f.field, "--"); })) {
    return 2;
  }
  return ExitCodeFor(status);
}

absl::Status NeedServer(const CliOptions& o) {
  if (!o.server.empty()) return absl::OkStatus();
  return FieldError("--server", absl::StrCat("required for '", o.command,
                                             "': the address of a wavecrest-server"));
}

absl::StatusOr<std::vector<v1::GemmShape>> ParseGemms(absl::string_view text) {
  std::vector<v1::GemmShape> out;
  for (absl::string_view one : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(one, 'x');
    std::vector<int64_t> v;
    for (absl::string_view p : parts) {
      int64_t x = 0;
      if (absl::SimpleAtoi(p, &x)) v.push_back(x);
    }
    if ((parts.size() != 3 && parts.size() != 4) || v.size() != parts.size()) {
      return FieldError("--gemm", absl::StrCat("\"", one, "\": expected MxNxK or MxNxKxBATCH"));
    }
    v1::GemmShape s;
    s.set_m(v[0]);
    s.set_n(v[1]);
    s.set_k(v[2]);
    s.set_batch(v.size() == 4 ? v[3] : 1);
    out.push_back(s);
  }
  if (out.empty()) return FieldError("--gemm", "required: MxNxK[xBATCH][,...] or --model");
  return out;
}

absl::StatusOr<v1::Mode> ParseMode(absl::string_view m) {
  if (m.empty() || m == "auto") return v1::MODE_AUTO;
  if (m == "measured") return v1::MODE_MEASURED;
  if (m == "predicted") return v1::MODE_PREDICTED;
  return FieldError("--mode", absl::StrCat("\"", m, "\"; allowed: auto, measured, predicted"));
}

ProgressBar::ProgressBar(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}

ProgressBar::~ProgressBar() { Clear(); }

void ProgressBar::Update(const v1::Progress& p) {
  if (!enabled_ || p.total() <= 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * p.done() / p.total());
  std::fprintf(stderr, "\r[%s%s] %lld/%lld %-30.30s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(p.done()),
               static_cast<long long>(p.total()), ForTerminal(p.message()).c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressBar::Clear() {
  if (shown_) std::fprintf(stderr, "\r%80s\r", "");
  shown_ = false;
}

std::vector<std::string> Files(const std::string& list) {
  return absl::StrSplit(list, ',', absl::SkipWhitespace());
}

absl::StatusOr<std::vector<Measurement>> ReadAll(const std::string& list,
                                                 std::vector<std::string>* labels) {
  std::vector<Measurement> all;
  for (const std::string& f : Files(list)) {
    ASSIGN_OR_RETURN(std::vector<Measurement> rows, ReadMeasurementsFile(f));
    if (labels) labels->push_back(absl::StrCat(f, ": ", rows.size(), " rows"));
    all.insert(all.end(), rows.begin(), rows.end());
  }
  return all;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text)) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write"));
  return absl::OkStatus();
}

}  // namespace cli
}  // namespace wavecrest
