// The worker pool's bookkeeping (server/worker_slot.h) on a fake clock: a worker that went down is
// restarted once its backoff has passed, and sooner again once it stayed up for a while; a worker
// too slow to start or silent in a job is killed; heartbeats come every interval. No process or
// RPC: the decisions alone.
#include "server/worker_slot.h"

#include "gtest/gtest.h"
#include "server/worker_pool.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

constexpr double kSlotNoJitter = 1.0;

WorkerPoolOptions SlotOptions() {
  WorkerPoolOptions o;
  o.backoff_initial = absl::Milliseconds(200);
  o.backoff_max = absl::Seconds(30);
  o.backoff_reset_after = absl::Seconds(60);
  o.start_timeout = absl::Seconds(30);
  o.job_timeout = absl::Seconds(60);
  o.heartbeat_interval = absl::Milliseconds(500);
  return o;
}

WorkerSlot NewSlot(const WorkerPoolOptions& o) {
  WorkerSlot w;
  w.backoff = RestartBackoff(o.backoff_initial, o.backoff_max, o.backoff_reset_after);
  return w;
}

v1::DeviceFingerprint H100Device() {
  v1::DeviceFingerprint d;
  d.set_name("NVIDIA H100 80GB HBM3");
  d.set_catalog_name("h100-sxm");
  return d;
}

TEST(WorkerSlotTest, ADownWorkerIsRestartedOnceItsBackoffHasPassed) {
  FakeClock clock;
  const WorkerPoolOptions o = SlotOptions();
  WorkerSlot w = NewSlot(o);
  w.state = WorkerState::kUp;
  EXPECT_EQ(MarkSlotDown(w, "exit", clock.Now(), kSlotNoJitter), absl::Milliseconds(200));
  EXPECT_EQ(w.state, WorkerState::kDown);
  EXPECT_EQ(w.restarts, 1);
  EXPECT_EQ(w.last_reason, "exit");
  clock.Advance(absl::Milliseconds(199));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kRestart);
  EXPECT_EQ(NextStep(w, clock.Now(), o, /*stopping=*/true), WorkerAction::kNone);
  // Failing again at once doubles the wait.
  w.state = WorkerState::kStarting;
  EXPECT_EQ(MarkSlotDown(w, "exit", clock.Now(), kSlotNoJitter), absl::Milliseconds(400));
  clock.Advance(absl::Milliseconds(399));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kRestart);
  // A job still on it (its call not yet over) holds the restart back.
  w.busy = true;
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone);
}

TEST(WorkerSlotTest, AWorkerUpForAMinuteIsRestartedQuicklyAgain) {
  FakeClock clock;
  const WorkerPoolOptions o = SlotOptions();
  WorkerSlot w = NewSlot(o);
  for (int i = 0; i < 8; ++i) clock.Advance(MarkSlotDown(w, "exit", clock.Now(), kSlotNoJitter));
  ASSERT_EQ(w.backoff.failures(), 8);
  MarkSlotUp(w, H100Device(), clock.Now(), o.heartbeat_interval);
  EXPECT_EQ(w.kind, "h100-sxm");
  // The supervisor's rounds while it is up forget its failures after backoff_reset_after.
  for (int s = 0; s < 59; ++s) {
    clock.Advance(absl::Seconds(1));
    NextStep(w, clock.Now(), o, false);
  }
  EXPECT_EQ(w.backoff.failures(), 8);
  clock.Advance(absl::Seconds(1));
  NextStep(w, clock.Now(), o, false);
  EXPECT_EQ(w.backoff.failures(), 0);
  EXPECT_EQ(MarkSlotDown(w, "heartbeat", clock.Now(), kSlotNoJitter), absl::Milliseconds(200));
}

TEST(WorkerSlotTest, AStartingWorkerIsDescribedUntilItsStartTimesOut) {
  FakeClock clock;
  const WorkerPoolOptions o = SlotOptions();
  WorkerSlot w = NewSlot(o);
  w.state = WorkerState::kStarting;
  w.started_at = clock.Now();
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kDescribe);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kStartTimedOut);
}

TEST(WorkerSlotTest, HeartbeatsComeEveryIntervalAndASilentJobIsHung) {
  FakeClock clock;
  const WorkerPoolOptions o = SlotOptions();
  WorkerSlot w = NewSlot(o);
  MarkSlotUp(w, H100Device(), clock.Now(), o.heartbeat_interval);
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone);
  clock.Advance(absl::Milliseconds(500));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kHeartbeat);
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone) << "the next is 500 ms on";
  // Killed by the pool: no heartbeat while it is reaped.
  clock.Advance(absl::Seconds(1));
  w.kill_reason = "heartbeat";
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kNone);
  w.kill_reason.clear();

  grpc::ClientContext call;
  w.busy = true;
  w.call = &call;
  w.last_event = clock.Now();
  clock.Advance(absl::Seconds(60));
  EXPECT_NE(NextStep(w, clock.Now(), o, false), WorkerAction::kKillHung);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(NextStep(w, clock.Now(), o, false), WorkerAction::kKillHung);
  // Down under its job: the job is told its worker died.
  MarkSlotDown(w, "hang", clock.Now(), kSlotNoJitter);
  EXPECT_TRUE(w.died_in_job);
  w.call = nullptr;
}

}  // namespace
}  // namespace wavecrest
