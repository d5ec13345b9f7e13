// The time the server's timing reads and waits on. The server runs on the wall clock; tests give
// a clock they advance (tests/server/advisor_service_test.cc), so that deadlines and budgets pass without
// anything sleeping or racing the machine's load.
#ifndef WAVECREST_SERVICE_CLOCK_H_
#define WAVECREST_SERVICE_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace wavecrest {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Waits `d` (a poll's pause): a test clock advances instead.
  virtual void SleepFor(absl::Duration d) = 0;

  // The wall clock.
  static Clock& Real();
};

class WallClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

inline Clock& Clock::Real() {
  static Clock* const real = new WallClock();
  return *real;
}

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_CLOCK_H_
