#include "service/log.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "service/clock.h"
#include "service/text.h"

namespace wavecrest {
namespace {

std::mutex& LogMutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

// Lines waiting to be written when buffering is on (SetLogFlushInterval), and the flusher that
// writes them. Never destroyed: the flusher and atexit may run while statics are torn down.
struct LogBuffer {
  std::mutex mu;      // guards the fields below; taken before io
  std::mutex io;      // held while writing, so that writes leave in the order they were taken
  std::condition_variable wake;
  std::string lines;
  absl::Duration interval = absl::ZeroDuration();  // 0: every line is written at once
  bool flusher_started = false;
};
LogBuffer& Buffer() {
  static LogBuffer* b = new LogBuffer;
  return *b;
}

// Takes what is buffered (and `line`) under b.mu, held by `lock`, and writes it after releasing
// b.mu (so that loggers need not wait for the write) but before anyone else can write.
void WriteOut(LogBuffer& b, std::unique_lock<std::mutex>& lock, std::string line = "") {
  std::string out;
  out.swap(b.lines);
  out += line;
  std::lock_guard<std::mutex> io(b.io);
  lock.unlock();
  if (out.empty()) return;
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

// Buffered lines are written once this much has piled up, whatever the interval.
constexpr size_t kMaxBufferedBytes = 64 << 10;

void Emit(LogLevel at, std::string line) {
  LogBuffer& b = Buffer();
  std::unique_lock<std::mutex> lock(b.mu);
  if (b.interval > absl::ZeroDuration() && at < LogLevel::kWarning &&
      b.lines.size() + line.size() < kMaxBufferedBytes) {
    b.lines += line;
    return;
  }
  WriteOut(b, lock, std::move(line));
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

void AppendField(std::string* out, absl::string_view key, const LogValue& value) {
  out->push_back(',');
  AppendJsonString(out, key);
  out->push_back(':');
  value.AppendJson(out);
}

// One JSON object per line, keys in the order written: ts, level, component, msg, the fields.
void Log(LogLevel at, const char* level, absl::string_view msg,
         std::initializer_list<LogField> fields) {
  if (!LogEnabled(at)) return;
  std::string line = "{\"ts\":\"";
  line.reserve(256);
  AppendTimestamp(&line, Clock::Real().Now());  // log lines carry the wall time
  absl::StrAppend(&line, "\",\"level\":\"", level, "\"");
  {
    std::lock_guard<std::mutex> lock(LogMutex());
    AppendField(&line, "component", Component());
  }
  AppendField(&line, "msg", msg);
  for (const auto& [k, v] : fields) {
    if (k == "ts" || k == "level" || k == "component" || k == "msg") continue;  // never twice
    AppendField(&line, k, v);
  }
  line += "}\n";
  Emit(at, std::move(line));
}

}  // namespace

void AppendJsonString(std::string* out, absl::string_view s) {
  // Printable ASCII without quotes or backslashes is its own JSON text: the access log's fields
  // almost always are. Anything else takes nlohmann::json's writer (escapes, bad UTF-8).
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out->push_back('"');
    out->append(s.data(), s.size());
    out->push_back('"');
    return;
  }
  out->append(JsonText(nlohmann::json(std::string(s))));
}

void LogValue::AppendJson(std::string* out) const {
  switch (kind_) {
    case Kind::kText:
      AppendJsonString(out, text_);
      return;
    case Kind::kInt:
      absl::StrAppend(out, int_);
      return;
    case Kind::kUint:
      absl::StrAppend(out, uint_);
      return;
    case Kind::kBool:
      out->append(int_ ? "true" : "false");
      return;
    case Kind::kDouble:
      out->append(JsonText(nlohmann::json(double_)));  // shortest round-trip form, null if not finite
      return;
  }
}

nlohmann::json LogValue::json() const {
  switch (kind_) {
    case Kind::kText:
      return ToValidUtf8(text_);
    case Kind::kInt:
      return int_;
    case Kind::kUint:
      return uint_;
    case Kind::kBool:
      return int_ != 0;
    case Kind::kDouble:
      break;
  }
  return double_;
}

void SetLogFlushInterval(absl::Duration interval) {
  LogBuffer& b = Buffer();
  std::unique_lock<std::mutex> lock(b.mu);
  b.interval = std::max(interval, absl::ZeroDuration());
  b.wake.notify_all();  // a flusher waiting out the old interval takes the new one
  if (b.interval == absl::ZeroDuration()) {
    WriteOut(b, lock);
    return;
  }
  if (b.flusher_started) return;
  b.flusher_started = true;
  std::atexit(FlushLogs);
  std::thread([&b] {
    std::unique_lock<std::mutex> l(b.mu);
    while (true) {
      if (b.interval == absl::ZeroDuration()) {
        b.wake.wait(l);  // buffering is off: nothing to do until it is turned on again
        continue;
      }
      // Woken before the interval ran out: it changed; wait out the new one.
      if (b.wake.wait_for(l, absl::ToChronoMicroseconds(b.interval)) == std::cv_status::no_timeout) {
        continue;
      }
      if (b.lines.empty()) continue;
      WriteOut(b, l);
      l.lock();
    }
  }).detach();
}

void FlushLogs() {
  LogBuffer& b = Buffer();
  std::unique_lock<std::mutex> lock(b.mu);
  WriteOut(b, lock);
}

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
