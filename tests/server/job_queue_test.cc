// The bounded job queue (server/job_queue.h) on a fake clock: the time a job waited is read on
// the queue's clock, a full queue refuses at once, and WaitIdle keeps to its deadline. Jobs are
// held and released with notifications; nothing sleeps.
#include "server/job_queue.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

TEST(JobQueueTest, AJobsQueueWaitIsTheTimeItWaitedOnTheQueuesClock) {
  FakeClock clock;
  absl::Notification first_running, release_first, second_done;
  absl::Duration first_wait = absl::InfiniteDuration(), second_wait = absl::InfiniteDuration();
  {
    JobQueue jobs(/*threads=*/1, /*capacity=*/4, &clock);
    ASSERT_TRUE(jobs.TrySubmit([&](absl::Duration wait) {
      first_wait = wait;
      first_running.Notify();
      release_first.WaitForNotification();
    }));
    first_running.WaitForNotification();
    ASSERT_TRUE(jobs.TrySubmit([&](absl::Duration wait) {
      second_wait = wait;
      second_done.Notify();
    }));
    EXPECT_EQ(jobs.depth(), 1);
    EXPECT_EQ(jobs.running(), 1);
    clock.Advance(absl::Seconds(3));  // the second job waits 3 s behind the first
    release_first.Notify();
    second_done.WaitForNotification();
  }
  EXPECT_EQ(first_wait, absl::ZeroDuration());
  EXPECT_EQ(second_wait, absl::Seconds(3));
}

TEST(JobQueueTest, AFullQueueRefusesAtOnceAndWaitIdleKeepsToItsDeadline) {
  FakeClock clock;
  absl::Notification running, release;
  std::atomic<int> ran{0};
  JobQueue jobs(/*threads=*/1, /*capacity=*/2, &clock);
  ASSERT_TRUE(jobs.TrySubmit([&](absl::Duration) {
    running.Notify();
    release.WaitForNotification();
    ++ran;
  }));
  running.WaitForNotification();
  EXPECT_TRUE(jobs.TrySubmit([&](absl::Duration) { ++ran; }));
  EXPECT_TRUE(jobs.TrySubmit([&](absl::Duration) { ++ran; }));
  EXPECT_FALSE(jobs.TrySubmit([&](absl::Duration) { ++ran; })) << "two wait already";
  EXPECT_EQ(jobs.capacity(), 2);
  // A deadline already passed on the queue's clock: not idle, and no wait.
  EXPECT_FALSE(jobs.WaitIdle(clock.Now() - absl::Seconds(1)));
  release.Notify();
  EXPECT_TRUE(jobs.WaitIdle(clock.Now() + absl::Hours(1)));
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(jobs.depth(), 0);
  EXPECT_EQ(jobs.running(), 0);
}

TEST(JobQueueTest, StoppingRunsEveryQueuedJobAndWaitIdleWithoutADeadlineWaitsForThem) {
  FakeClock clock;
  std::atomic<int> ran{0};
  {
    JobQueue jobs(/*threads=*/2, /*capacity=*/16, &clock);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(jobs.TrySubmit([&](absl::Duration) { ++ran; }));
    EXPECT_TRUE(jobs.WaitIdle(absl::InfiniteFuture()));
    EXPECT_EQ(ran.load(), 10);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(jobs.TrySubmit([&](absl::Duration) { ++ran; }));
  }
  EXPECT_EQ(ran.load(), 20);
}

}  // namespace
}  // namespace wavecrest
