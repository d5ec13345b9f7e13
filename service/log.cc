#include "service/log.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
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

// "2026-11-25T08:01:02.345Z". The part to the second is formatted once a second per thread
// (absl::FormatTime is a large share of a log line's cost).
void AppendTimestamp(std::string* out, absl::Time now) {
  thread_local int64_t cached_second = std::numeric_limits<int64_t>::min();
  thread_local std::string cached;
  const int64_t ms = absl::ToUnixMillis(now);
  const int64_t second = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  if (second != cached_second) {
    cached = absl::FormatTime("%Y-%m-%dT%H:%M:%S", absl::FromUnixSeconds(second),
                              absl::UTCTimeZone());
    cached_second = second;
  }
  absl::StrAppend(out, cached, ".", absl::Dec(ms - second * 1000, absl::kZeroPad3), "Z");
}

void AppendField(std::string* out, absl::string_view key, const nlohmann::json& value) {
  absl::StrAppend(out, ",", JsonText(std::string(key)), ":", JsonText(value));
}

// One JSON object per line, keys in the order written: ts, level, component, msg, the fields.
void Log(LogLevel at, const char* level, absl::string_view msg,
         std::initializer_list<LogField> fields) {
  if (!LogEnabled(at)) return;
  std::string line = "{\"ts\":\"";
  line.reserve(256);
  AppendTimestamp(&line, absl::Now());
  absl::StrAppend(&line, "\",\"level\":\"", level, "\"");
  {
    std::lock_guard<std::mutex> lock(LogMutex());
    AppendField(&line, "component", Component());
  }
  AppendField(&line, "msg", std::string(msg));
  for (const auto& [k, v] : fields) {
    if (k == "ts" || k == "level" || k == "component" || k == "msg") continue;  // never twice
    AppendField(&line, k, v.json());
  }
  line += "}\n";
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
