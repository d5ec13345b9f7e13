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
#include "nlohmann/json.hpp"

namespace wavecrest {

// A log value: text, a number or a boolean, written as such.
class LogValue {
 public:
  LogValue(const char* s) : j_(std::string(s)) {}        // NOLINT: implicit by design
  LogValue(const std::string& s) : j_(s) {}              // NOLINT
  LogValue(absl::string_view s) : j_(std::string(s)) {}  // NOLINT
  LogValue(bool b) : j_(b) {}                            // NOLINT
  template <typename T,
            typename = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
  LogValue(T v) : j_(v) {}  // NOLINT
  const nlohmann::json& json() const { return j_; }

 private:
  nlohmann::json j_;
};

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

// Sets the "component" field of every line ("server", "worker").
void SetLogComponent(absl::string_view component);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_LOG_H_
