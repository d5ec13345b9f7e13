// The worker pool's quarantine (server/worker_pool.h): a GEMM or layer in flight when its worker
// died (crash, hang, sticky error) is charged with the death; after `after` such deaths it is
// quarantined, so that later requests are refused instead of crashing a worker again. A
// quarantine ends `lasts` after the item's last crash (0 = never), or when an operator clears it.
// Times are read on the pool's clock, so that tests step them.
#ifndef WAVECREST_SERVER_WORKER_QUARANTINE_H_
#define WAVECREST_SERVER_WORKER_QUARANTINE_H_

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "service/clock.h"

namespace wavecrest {

class WorkerQuarantine {
 public:
  WorkerQuarantine(int after, absl::Duration lasts, Clock* clock)
      : after_(after), lasts_(lasts), clock_(clock) {}

  // A worker of `kind` died while timing `item` (a GEMM's or layer's key string): true when
  // this death quarantines it. An expired entry starts counting again.
  bool Charge(absl::string_view kind, absl::string_view item);
  // Whether `item` is quarantined on `kind` now (an expired entry is dropped).
  bool Quarantined(absl::string_view kind, absl::string_view item);
  // Ends the quarantine of `kind`'s items (every kind when empty); returns how many ended.
  int64_t Clear(absl::string_view kind);
  // Items quarantined (the wavecrest_quarantined gauge).
  int64_t Count() const;

  int after() const { return after_; }
  absl::Duration lasts() const { return lasts_; }

 private:
  struct Crashes {
    int count = 0;
    absl::Time last;
  };
  static std::string Key(absl::string_view kind, absl::string_view item);
  bool QuarantinedLocked(const std::string& key);

  const int after_;
  const absl::Duration lasts_;
  Clock* clock_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Crashes> crashes_;  // by Key
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_WORKER_QUARANTINE_H_
