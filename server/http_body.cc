#include "server/http_body.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/errors.h"

namespace wavecrest {

BodySlots::Slot::Slot(Slot&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)), client_(std::move(o.client_)), large_(o.large_) {}

BodySlots::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Give(client_, large_);
}

std::optional<BodySlots::Slot> BodySlots::Take(const std::string& client, bool large) {
  std::lock_guard<std::mutex> lock(mu_);
  if (all_ >= limits_.slots || (large && large_ >= limits_.large_slots)) return std::nullopt;
  auto it = by_client_.find(client);
  if (it != by_client_.end() && it->second >= limits_.per_client_slots) return std::nullopt;
  ++all_;
  large_ += large ? 1 : 0;
  ++by_client_[client];
  return Slot(this, client, large);
}

void BodySlots::Give(const std::string& client, bool large) {
  std::lock_guard<std::mutex> lock(mu_);
  --all_;
  large_ -= large ? 1 : 0;
  auto it = by_client_.find(client);
  if (it != by_client_.end() && --it->second <= 0) by_client_.erase(it);
}

int BodySlots::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_;
}

absl::Status ReadBody(const std::function<int(char*, size_t)>& read, const BodyLimits& limits,
                      int64_t declared, Clock& clock, std::string* body, int* http_status) {
  auto refuse = [&](int status, absl::Status st) {
    *http_status = status;
    return st;
  };
  const absl::Time start = clock.Now();
  char buf[16384];
  while (true) {
    const absl::Time before = clock.Now();
    const int n = read(buf, sizeof(buf));
    if (n > 0) body->append(buf, static_cast<size_t>(n));
    const int64_t got = static_cast<int64_t>(body->size());
    if (got > limits.max_body_bytes) {
      return refuse(413, absl::InvalidArgumentError(absl::StrCat("the body is larger than ",
                                                                 limits.max_body_bytes, " bytes")));
    }
    if (declared >= 0 && got >= declared) break;
    if (n <= 0) {
      // civetweb answers 0 both at the end and when no byte came within its io timeout.
      if (declared >= 0 && clock.Now() - before >= limits.io_timeout / 2) {
        return refuse(
            408, absl::DeadlineExceededError(absl::StrCat(
                     "no byte of the body came for ", absl::FormatDuration(clock.Now() - before),
                     " (", got, " of ", declared, " bytes came)")));
      }
      break;
    }
    const absl::Duration age = clock.Now() - start;
    if (age > limits.budget) {
      return refuse(408, absl::DeadlineExceededError(absl::StrCat(
                             "the body did not arrive within ", absl::FormatDuration(limits.budget),
                             " (", got, " bytes came)")));
    }
    if (age > limits.grace) {
      const int64_t due = static_cast<int64_t>(absl::ToDoubleSeconds(age) *
                                               static_cast<double>(limits.min_bytes_per_s));
      if (got < (declared >= 0 ? std::min(declared, due) : due)) {
        return refuse(
            408, absl::DeadlineExceededError(absl::StrCat(
                     "the body arrives too slowly: ", got, " bytes in ", absl::FormatDuration(age),
                     "; a body keeps up at least ", limits.min_bytes_per_s,
                     " bytes/s after its first ", absl::FormatDuration(limits.grace))));
      }
    }
  }
  if (declared >= 0 && static_cast<int64_t>(body->size()) < declared) {
    return refuse(400,
                  FieldError("Content-Length", absl::StrCat("the body ended after ", body->size(),
                                                            " of ", declared, " bytes")));
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
