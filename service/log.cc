#include "service/log.h"

#include <cstdio>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

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

void Log(const char* level, absl::string_view msg, std::initializer_list<LogField> fields) {
  nlohmann::json j;
  j["ts"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  j["level"] = level;
  j["component"] = Component();
  j["msg"] = std::string(msg);
  for (const auto& [k, v] : fields) j[std::string(k)] = v;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(LogMutex());
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace

void SetLogComponent(absl::string_view component) {
  std::lock_guard<std::mutex> lock(LogMutex());
  Component() = std::string(component);
}
void LogInfo(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log("info", msg, fields);
}
void LogWarning(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log("warning", msg, fields);
}
void LogError(absl::string_view msg, std::initializer_list<LogField> fields) {
  Log("error", msg, fields);
}

}  // namespace wavecrest
