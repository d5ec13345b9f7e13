#include "service/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "service/text.h"

namespace wavecrest {
namespace {

std::mutex& LogMutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::string& Component() {
  static std::string* c = new std::string("wavecrest");
  return *c;
}

std::atomic<int>& Level() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

void Log(LogLevel at, const char* level, absl::string_view msg,
         std::initializer_list<LogField> fields) {
  if (!LogEnabled(at)) return;
  nlohmann::json j;
  j["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  j["level"] = level;
  j["component"] = Component();
  j["msg"] = std::string(msg);
  for (const auto& [k, v] : fields) j[std::string(k)] = v.json();
  const std::string line = JsonText(j) + "\n";
  std::lock_guard<std::mutex> lock(LogMutex());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetLogComponent(absl::string_view component) {
  std::lock_guard<std::mutex> lock(LogMutex());
  Component() = std::string(component);
}
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warning") return LogLevel::kWarning;
  if (name == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_level: \"", name, "\"; allowed: debug, info, warning, error"));
}
absl::Status ConfigureLogging(absl::string_view level_name) {
  absl::StatusOr<LogLevel> level = ParseLogLevel(level_name);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  return absl::OkStatus();
}
void SetLogLevel(LogLevel level) { Level().store(static_cast<int>(level)); }
bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= Level().load(); }

void LogDebug(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log(LogLevel::kDebug, "debug", msg, fields);
}
void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log(LogLevel::kInfo, "info", msg, fields);
}
void LogWarning(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log(LogLevel::kWarning, "warning", msg, fields);
}
void LogError(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log(LogLevel::kError, "error", msg, fields);
}

}  // namespace wavecrest
