#include "server/restart_backoff.h"

#include <algorithm>

namespace wavecrest {

void RestartBackoff::Tick(absl::Time now) {
  if (failures_ > 0 && now - up_since_ >= reset_after_) failures_ = 0;
}

absl::Duration RestartBackoff::Down(absl::Time now, double jitter) {
  Tick(now);
  up_since_ = absl::InfiniteFuture();
  ++failures_;
  const absl::Duration backoff = initial_ * (1 << std::min(failures_ - 1, 16));
  return std::min(backoff, max_) * jitter;
}

}  // namespace wavecrest
