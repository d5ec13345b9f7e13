// A clock the tests advance (service/clock.h): time passes only when a test moves it or when the
// code under test "sleeps" on it, so deadlines, budgets, backoff and quarantine are tested without
// waiting on the wall clock or racing the machine's load. It starts at a fixed instant, so a
// test's times are the same on every run.
#ifndef WAVECREST_TESTS_FAKES_FAKE_CLOCK_H_
#define WAVECREST_TESTS_FAKES_FAKE_CLOCK_H_

#include <mutex>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "service/clock.h"

namespace wavecrest {

class FakeClock final : public Clock {
 public:
  FakeClock() = default;
  explicit FakeClock(absl::Time start) : now_(start) {}

  absl::Time Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }
  // A poll's pause passes at once: the clock moves on by `d`.
  void SleepFor(absl::Duration d) override { Advance(d); }
  void Advance(absl::Duration d) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += d;
  }

 private:
  mutable std::mutex mu_;
  absl::Time now_ = absl::FromCivil(absl::CivilSecond(2026, 1, 1, 0, 0, 0), absl::UTCTimeZone());
};

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_FAKES_FAKE_CLOCK_H_
