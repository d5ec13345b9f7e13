// How long the worker pool (server/worker_pool.h) waits before restarting a worker that went
// down: exponential in its failures in a row (initial · 2^(failures − 1), at most `max`), times
// a jitter in [0.5, 1.5) so that workers that failed together do not restart together. The
// failures are forgotten once the worker has stayed up for `reset_after`: a worker that crash-
// looped once and then ran for a while is restarted at once the next time, not after `max`.
// Times are passed in (the pool's clock), so that tests step them.
#ifndef WAVECREST_SERVER_RESTART_BACKOFF_H_
#define WAVECREST_SERVER_RESTART_BACKOFF_H_

#include "absl/time/time.h"

namespace wavecrest {

class RestartBackoff {
 public:
  RestartBackoff(absl::Duration initial, absl::Duration max, absl::Duration reset_after)
      : initial_(initial), max_(max), reset_after_(reset_after) {}

  // The worker came up (answered) at `now`.
  void Up(absl::Time now) { up_since_ = now; }
  // While up: forgets the failures once the worker has been up for reset_after.
  void Tick(absl::Time now);
  // The worker went down (or failed to start) at `now`: the delay before the next attempt,
  // `jitter` in [0.5, 1.5).
  absl::Duration Down(absl::Time now, double jitter);

  // Failures in a row not yet forgotten.
  int failures() const { return failures_; }

 private:
  absl::Duration initial_, max_, reset_after_;
  int failures_ = 0;
  absl::Time up_since_ = absl::InfiniteFuture();  // InfiniteFuture: not up
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_RESTART_BACKOFF_H_
