// What the server measures with (server/worker_setup.h), in process: the --workers and
// --worker_backend flags are checked before anything starts, a server without workers serves
// "can measure" NOT_SERVING, and stale socket directories are removed by their owner's liveness
// or, without a pid file, by their age on the given clock.
#include "server/worker_setup.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(WorkerSetupTest, BadWorkerFlagsAreRefusedBeforeAnythingStarts) {
  Metrics metrics;
  FakeClock clock;
  ServerOptions o;
  o.workers = "lots";
  absl::StatusOr<std::unique_ptr<WorkerSetup>> s = StartWorkers(o, &metrics, &clock);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--workers"));
  o.workers = "65";
  EXPECT_EQ(StartWorkers(o, &metrics, &clock).status().code(), absl::StatusCode::kInvalidArgument);
  o.workers = "1";
  o.worker_binary = "/nonexistent/wavecrest-worker";
  s = StartWorkers(o, &metrics, &clock);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--worker_binary"));
  o.worker_binary = "/bin/true";
  o.worker_backend = "opencl";
  s = StartWorkers(o, &metrics, &clock);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("--worker_backend"));
}

TEST(WorkerSetupTest, WithoutWorkersNothingIsMeasured) {
  Metrics metrics;
  ServerOptions o;
  o.workers = "none";
  absl::StatusOr<std::unique_ptr<WorkerSetup>> s = StartWorkers(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->workers(), nullptr);
  EXPECT_EQ((*s)->store(), nullptr);
  (*s)->Stop();
}

// A wavecrest-workers-* directory in `parent`, with a pid file naming `owner` (none when 0).
std::filesystem::path SocketDirOf(const std::filesystem::path& parent, const std::string& name,
                                  pid_t owner) {
  const std::filesystem::path dir = parent / ("wavecrest-workers-" + name);
  std::filesystem::create_directories(dir);
  if (owner != 0) std::ofstream(dir / "server.pid") << owner << "\n";
  return dir;
}

// A process id that is gone: a child that exited and was reaped.
pid_t GonePid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

TEST(WorkerSetupTest, StaleSocketDirectoriesAreThoseWhoseServerIsGone) {
  const std::filesystem::path parent = std::filesystem::path(::testing::TempDir()) /
                                       ("worker-setup-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(parent);
  const auto alive = SocketDirOf(parent, "alive", getpid());
  const auto dead = SocketDirOf(parent, "dead", GonePid());
  const auto young = SocketDirOf(parent, "young", 0);
  const auto other = parent / "not-ours";
  std::filesystem::create_directories(other);
  struct stat st;
  ASSERT_EQ(stat(young.c_str(), &st), 0);
  FakeClock clock(absl::FromUnixSeconds(st.st_mtime) + absl::Minutes(59));
  RemoveStaleSocketDirs(clock, parent.string());
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(young)) << "no pid file, and under an hour old";
  EXPECT_TRUE(std::filesystem::exists(other));
  clock.Advance(absl::Minutes(2));
  RemoveStaleSocketDirs(clock, parent.string());
  EXPECT_FALSE(std::filesystem::exists(young)) << "no pid file, and over an hour old";
  EXPECT_TRUE(std::filesystem::exists(alive));
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace wavecrest
