// The SQLite result cache and spool (server/sqlite_store.h): a file another process holds locked
// is in use, not damaged. Replicas on one host share a PostgreSQL store's default spool
// (~/.cache/wavecrest/spool-<hash of the URI>.db); two starting together once took the other's
// lock for damage, moved the file aside from under it, and the other replica failed to start.
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/sqlite_store.h"
#include "service/convert.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::TempDir;

// Files moved aside as damaged ("<name>.corrupt-<time>").
int MovedAside(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += e.path().filename().string().find(".corrupt-") != std::string::npos;
  }
  return n;
}

TEST(SqliteStoreTest, AFileAnotherProcessHoldsLockedIsWaitedForNotMovedAside) {
  TempDir dir;
  const std::string path = dir.File("spool.db");
  {
    auto first = SqliteStore::Open(path);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE((*first)->PublishCalibration("{\"refit\": 1}", "replica-a:1").ok());
  }

  // Another process's connection holds the write lock for longer than one open waits (1 s).
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::Notification opening;
  std::thread holder([&] {
    opening.WaitForNotification();
    absl::SleepFor(absl::Milliseconds(2500));
    sqlite3_exec(other, "COMMIT;", nullptr, nullptr, nullptr);
  });
  opening.Notify();
  const absl::Time start = absl::Now();
  auto second = SqliteStore::Open(path);
  const absl::Duration waited = absl::Now() - start;
  holder.join();
  sqlite3_close(other);

  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GE(waited, absl::Seconds(1)) << "it opened while the lock was held";
  EXPECT_TRUE((*second)->moved_aside().empty()) << (*second)->moved_aside();
  EXPECT_EQ(MovedAside(dir.path()), 0);
  // The same file, with what the first store wrote.
  auto cal = (*second)->LatestCalibration();
  ASSERT_TRUE(cal.has_value());
  EXPECT_EQ(cal->file_json, "{\"refit\": 1}");
}

// Replicas starting together on one host open a new spool at the same moment: each opens the
// same file, none takes another's lock for damage.
TEST(SqliteStoreTest, ProcessesOpeningANewFileTogetherAllShareIt) {
  TempDir dir;
  constexpr int kFiles = 10, kProcesses = 6;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir.File("spool-" + std::to_string(f) + ".db");
    const absl::Time go = absl::Now() + absl::Milliseconds(200);
    std::vector<pid_t> children;
    for (int i = 0; i < kProcesses; ++i) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        absl::SleepFor(go - absl::Now());
        auto store = SqliteStore::Open(path);
        _exit(store.ok() && (*store)->moved_aside().empty() ? 0 : 1);
      }
      children.push_back(pid);
    }
    int failed = 0;
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    EXPECT_EQ(failed, 0) << path;
  }
  EXPECT_EQ(MovedAside(dir.path()), 0);
}

// A file that is not a database at all is still moved aside and replaced at once.
TEST(SqliteStoreTest, AFileThatIsNotADatabaseIsMovedAside) {
  TempDir dir;
  const std::string path = dir.File("spool.db");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a database, but long enough to have a header of some sort......", f);
    std::fclose(f);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->moved_aside().empty());
  EXPECT_TRUE(std::filesystem::exists((*store)->moved_aside()));
  EXPECT_EQ(MovedAside(dir.path()), 1);
  EXPECT_EQ((*store)->Count(), 0);
}

// A spool's leases and what a look at a spool file finds (server/spool_file.cc): live leases are
// counted, ended ones removed by the next renewal, and a file that is not a spool is reported as
// none, never opened for writing or moved aside.
TEST(SqliteStoreTest, LeasesAndALookAtASpoolFile) {
  TempDir dir;
  const std::string path = dir.File("spool-a.db");
  const absl::Time now = absl::Now();
  {
    auto spool = SqliteStore::Open(path);
    ASSERT_TRUE(spool.ok()) << spool.status();
    EXPECT_EQ((*spool)->SetMetaIfAbsent("store", "postgresql://db/x"), "postgresql://db/x");
    EXPECT_EQ((*spool)->SetMetaIfAbsent("store", "postgresql://db/y"), "postgresql://db/x");
    ASSERT_TRUE((*spool)->RenewLease("host:1", now - absl::Seconds(5), now - absl::Seconds(6)));
    ASSERT_TRUE((*spool)->RenewLease("host:2", now + absl::Seconds(30), now - absl::Seconds(6)));
    auto info = InspectSpoolFile(path, now);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->store, "postgresql://db/x");
    EXPECT_EQ(info->live_leases, 1);
    EXPECT_EQ(info->rows, 0);
    ASSERT_TRUE((*spool)->RenewLease("host:3", now + absl::Seconds(30), now));
    EXPECT_FALSE((*spool)->Meta("lease:host:1").has_value()) << "an ended lease was kept";
    EXPECT_EQ(InspectSpoolFile(path, now)->live_leases, 2);
    ASSERT_TRUE((*spool)->DropLease("host:2"));
    EXPECT_EQ(InspectSpoolFile(path, now)->live_leases, 1);
    // Seen from another connection while this one is open (WAL).
    GemmKey key{{512, 4096, 4096, 1}, Layout::kTN, DType::kBf16};
    v1::GemmTiming t = TimingOf(key);
    t.set_time_s(1e-4);
    ASSERT_EQ((*spool)->Store("h100-sxm", t), StoreOutcome::kStored);
    EXPECT_EQ(InspectSpoolFile(path, now)->rows, 1);
  }
  const std::string junk = dir.File("spool-junk.db");
  {
    FILE* f = std::fopen(junk.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a database, but long enough to have a header of some sort......", f);
    std::fclose(f);
  }
  EXPECT_FALSE(InspectSpoolFile(junk, now).has_value());
  EXPECT_FALSE(InspectSpoolFile(dir.File("spool-missing.db"), now).has_value());
  EXPECT_EQ(MovedAside(dir.path()), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.File("spool-missing.db")));
}

}  // namespace
}  // namespace wavecrest
