#include "server/worker_quarantine.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace wavecrest {

std::string WorkerQuarantine::Key(absl::string_view kind, absl::string_view item) {
  return absl::StrCat(kind, "|", item);
}

bool WorkerQuarantine::QuarantinedLocked(const std::string& key) {
  auto it = crashes_.find(key);
  if (it == crashes_.end()) return false;
  if (lasts_ > absl::ZeroDuration() && clock_->Now() - it->second.last > lasts_) {
    crashes_.erase(it);
    return false;
  }
  return it->second.count >= after_;
}

bool WorkerQuarantine::Charge(absl::string_view kind, absl::string_view item) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = Key(kind, item);
  QuarantinedLocked(key);  // an expired entry starts counting again
  Crashes& c = crashes_[key];
  c.last = clock_->Now();
  return ++c.count == after_;
}

bool WorkerQuarantine::Quarantined(absl::string_view kind, absl::string_view item) {
  std::lock_guard<std::mutex> lock(mu_);
  return QuarantinedLocked(Key(kind, item));
}

int64_t WorkerQuarantine::Clear(absl::string_view kind) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t cleared = 0;
  const std::string prefix = absl::StrCat(kind, "|");
  for (auto it = crashes_.begin(); it != crashes_.end();) {
    if (kind.empty() || absl::StartsWith(it->first, prefix)) {
      cleared += it->second.count >= after_;
      crashes_.erase(it++);
    } else {
      ++it;
    }
  }
  return cleared;
}

int64_t WorkerQuarantine::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t q = 0;
  for (const auto& [k, c] : crashes_) q += c.count >= after_;
  return q;
}

}  // namespace wavecrest
