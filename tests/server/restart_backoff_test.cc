// The worker pool's restart backoff (server/restart_backoff.h), on stepped time: it grows with
// failures in a row up to its cap, and is forgotten once a worker has stayed up for a while
// (issue 52: it grew to 42 s and never came down).
#include "server/restart_backoff.h"

#include <vector>

#include "gtest/gtest.h"

namespace wavecrest {
namespace {

constexpr double kNoJitter = 1.0;

TEST(RestartBackoffTest, GrowsWithFailuresInARowUpToItsCap) {
  RestartBackoff b(absl::Milliseconds(200), absl::Seconds(30), absl::Seconds(60));
  absl::Time t = absl::FromUnixSeconds(1000);
  std::vector<absl::Duration> waits;
  for (int i = 0; i < 10; ++i) {
    waits.push_back(b.Down(t, kNoJitter));
    t += waits.back() + absl::Seconds(1);  // restarted, failed again a second later
  }
  EXPECT_EQ(waits[0], absl::Milliseconds(200));
  EXPECT_EQ(waits[1], absl::Milliseconds(400));
  EXPECT_EQ(waits[4], absl::Milliseconds(3200));
  EXPECT_EQ(waits[9], absl::Seconds(30));
  EXPECT_EQ(b.failures(), 10);
  // Jitter scales the wait: [0.5, 1.5) of it.
  EXPECT_EQ(b.Down(t, 1.25), absl::Milliseconds(37500));
}

TEST(RestartBackoffTest, IsForgottenOnceTheWorkerStayedUpForAWhile) {
  RestartBackoff b(absl::Milliseconds(200), absl::Seconds(30), absl::Seconds(60));
  absl::Time t = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 10; ++i) t += b.Down(t, kNoJitter) + absl::Seconds(1);
  ASSERT_EQ(b.failures(), 10);
  // Up for 59 s, then down: still backing off at the cap.
  b.Up(t);
  t += absl::Seconds(59);
  b.Tick(t);
  EXPECT_EQ(b.failures(), 10);
  EXPECT_EQ(b.Down(t, kNoJitter), absl::Seconds(30));
  t += absl::Seconds(31);
  // Up for a minute: the ticks forget the failures, and the next restart is quick.
  b.Up(t);
  for (int s = 0; s < 60; ++s) b.Tick(t += absl::Seconds(1));
  EXPECT_EQ(b.failures(), 0);
  EXPECT_EQ(b.Down(t, kNoJitter), absl::Milliseconds(200));
  // Also when it goes down before any tick saw the minute pass.
  t += absl::Seconds(1);
  b.Up(t);
  EXPECT_EQ(b.Down(t + absl::Seconds(61), kNoJitter), absl::Milliseconds(200));
}

TEST(RestartBackoffTest, TimeSpentDownDoesNotCountAsUp) {
  RestartBackoff b(absl::Milliseconds(200), absl::Seconds(30), absl::Seconds(60));
  absl::Time t = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 8; ++i) t += b.Down(t, kNoJitter);  // failed starts, never up
  t += absl::Minutes(5);
  b.Tick(t);
  EXPECT_EQ(b.failures(), 8);
  EXPECT_EQ(b.Down(t, kNoJitter), absl::Seconds(30));
}

}  // namespace
}  // namespace wavecrest
