// The worker pool's process supervision (server/worker_supervisor.cc): Stop ends a local worker
// that ignores SIGTERM by SIGKILL once 2 s have passed on the pool's clock; on a fake clock that
// is no wait at all. (Restarts, heartbeats and the watchdog are decided by server/worker_slot.h,
// tested in worker_slot_test.cc; real workers in tests/integration/worker_test.cc.)
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "gtest/gtest.h"
#include "server/worker_pool.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

TEST(WorkerSupervisorTest, StopKillsALocalWorkerThatIgnoresSigtermWithinTwoSeconds) {
  FakeClock clock;
  WorkerPoolOptions o;
  // A "worker" that never answers and shrugs off SIGTERM (the pool appends --listen: $0 here).
  o.local.push_back(
      {{"/bin/sh", "-c", "trap '' TERM; exec sleep 60"},
       ::testing::TempDir() + "/worker-supervisor-test-" + std::to_string(getpid()) + ".sock"});
  WorkerPool pool(o, /*metrics=*/nullptr, &clock);
  pool.Start();
  v1::ListDevicesResponse started;
  pool.AddWorkers(&started, /*internal=*/true);
  ASSERT_EQ(started.workers_size(), 1);
  const pid_t pid = started.workers(0).pid();
  ASSERT_GT(pid, 0);

  const absl::Time before = clock.Now();
  pool.Stop();
  EXPECT_LE(clock.Now() - before, absl::Seconds(2) + absl::Milliseconds(10));
  EXPECT_EQ(kill(pid, 0), -1) << "the worker is gone and reaped";
  EXPECT_EQ(errno, ESRCH);
  v1::ListDevicesResponse stopped;
  pool.AddWorkers(&stopped, true);
  EXPECT_EQ(stopped.workers(0).pid(), 0);
  EXPECT_FALSE(stopped.workers(0).up());
}

}  // namespace
}  // namespace wavecrest
