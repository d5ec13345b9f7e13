// Structured logs: one JSON object per line on stderr ({"ts":..., "level":..., "msg":..., ...}),
// with typed values (numbers stay numbers), below a level set by --log_level.
#ifndef WAVECREST_SERVICE_LOG_H_
#define WAVECREST_SERVICE_LOG_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace wavecrest {

// A log value: text, a number or a boolean, written as such. It refers to the text it was given
// (a log call's arguments outlive the call) and builds no JSON until the line is written.
class LogValue {
 public:
  enum class Kind { kText, kInt, kUint, kDouble, kBool };
  LogValue(const char* s) : kind_(Kind::kText), text_(s) {}        // NOLINT: implicit by design
  LogValue(const std::string& s) : kind_(Kind::kText), text_(s) {}  // NOLINT
  LogValue(absl::string_view s) : kind_(Kind::kText), text_(s) {}   // NOLINT
  LogValue(bool b) : kind_(Kind::kBool), int_(b) {}                 // NOLINT
  template <typename T,
            typename = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
  LogValue(T v) {  // NOLINT
    if constexpr (std::is_floating_point_v<T>) {
      kind_ = Kind::kDouble;
      double_ = static_cast<double>(v);
    } else if constexpr (std::is_signed_v<T>) {
      kind_ = Kind::kInt;
      int_ = static_cast<int64_t>(v);
    } else {
      kind_ = Kind::kUint;
      uint_ = static_cast<uint64_t>(v);
    }
  }
  // The value as JSON text, appended to `out` (text that is not UTF-8 gets U+FFFD for each bad
  // sequence, as nlohmann::json's replace handler writes it).
  void AppendJson(std::string* out) const;
  // The value as a JSON document (text made valid UTF-8 as AppendJson writes it).
  nlohmann::json json() const;

 private:
  Kind kind_ = Kind::kText;
  absl::string_view text_;
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  double double_ = 0;
};
// Appends `s` as a JSON string ("..." with escapes; U+FFFD for bytes that are not UTF-8).
void AppendJsonString(std::string* out, absl::string_view s);

using LogField = std::pair<absl::string_view, LogValue>;

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning", "error"; INVALID_ARGUMENT naming the allowed values otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
// Lines below `level` are dropped (default info).
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// ParseLogLevel, then SetLogLevel: what a program's --log_level does.
absl::Status ConfigureLogging(absl::string_view level_name);

void LogDebug(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogWarning(absl::string_view msg, std::initializer_list<LogField> fields = {});
void LogError(absl::string_view msg, std::initializer_list<LogField> fields = {});

// Buffering, as glog does for its INFO lines: with an interval above 0, info and debug lines wait
// in memory up to that long (or until 64 KiB pile up) and go out together; a warning or error
// line writes them and itself at once, in order; a normal exit writes what is left. A process
// that crashes loses at most the last interval of info lines. The server turns it on
// (--log_flush_ms, 100): one write per access-log line was ~7 us of its ~55 us of CPU per
// Analyze under load. 0 (the default) writes every line at once.
void SetLogFlushInterval(absl::Duration interval);
// Writes whatever is buffered now.
void FlushLogs();
// Sets the "component" field of every line ("server", "worker").
void SetLogComponent(absl::string_view component);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_LOG_H_
