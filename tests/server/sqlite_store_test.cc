// The SQLite measurement store and spool (server/sqlite_store.h): a file another process holds
// locked is in use, not damaged. Replicas on one host share a PostgreSQL store's default spool
// (~/.cache/wavecrest/spool-<hash of the URI>.db); two starting together once took the other's
// lock for damage, moved the file aside from under it, and the other replica failed to start.
// Waits on a lock run on the store's clock: here a fake one, so nothing sleeps.
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/sqlite_store.h"
#include "service/convert.h"
#include "tests/fakes/fake_clock.h"
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

// A fake clock on which another process's lock ends: once the clock has passed `after` (the
// store waiting on it), `then` runs, once.
class ClockWithLockEnd final : public Clock {
 public:
  ClockWithLockEnd(absl::Duration after, std::function<void()> then)
      : end_(fake_.Now() + after), then_(std::move(then)) {}
  absl::Time Now() const override { return fake_.Now(); }
  void SleepFor(absl::Duration d) override {
    fake_.SleepFor(d);
    if (then_ && fake_.Now() >= end_) std::exchange(then_, nullptr)();
  }

 private:
  FakeClock fake_;
  absl::Time end_;
  std::function<void()> then_;
};

// Another process's connection to `path`, holding the write lock until Commit().
class WriteLockHolder {
 public:
  explicit WriteLockHolder(const std::string& path) {
    ok_ = sqlite3_open(path.c_str(), &db_) == SQLITE_OK &&
          sqlite3_exec(db_, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~WriteLockHolder() {
    Commit();
    sqlite3_close(db_);
  }
  bool ok() const { return ok_; }
  void Commit() { sqlite3_exec(db_, "COMMIT;", nullptr, nullptr, nullptr); }

 private:
  sqlite3* db_ = nullptr;
  bool ok_ = false;
};

TEST(SqliteStoreTest, AFileAnotherProcessHoldsLockedIsWaitedForNotMovedAside) {
  TempDir dir;
  const std::string path = dir.File("spool.db");
  {
    auto first = SqliteStore::Open(path);
    ASSERT_TRUE(first.ok()) << first.status();
    ASSERT_TRUE((*first)->PublishCalibration("{\"refit\": 1}", "replica-a:1").ok());
  }

  // Another process's connection holds the write lock for longer than one open waits (1 s).
  WriteLockHolder other(path);
  ASSERT_TRUE(other.ok());
  ClockWithLockEnd clock(absl::Milliseconds(2500), [&] { other.Commit(); });
  const absl::Time start = clock.Now();
  auto second = SqliteStore::Open(path, clock);
  const absl::Duration waited = clock.Now() - start;

  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GE(waited, absl::Milliseconds(2500)) << "it opened while the lock was held";
  EXPECT_LT(waited, absl::Seconds(4));
  EXPECT_TRUE((*second)->moved_aside().empty()) << (*second)->moved_aside();
  EXPECT_EQ(MovedAside(dir.path()), 0);
  // The same file, with what the first store wrote.
  auto cal = (*second)->LatestCalibration();
  ASSERT_TRUE(cal.has_value());
  EXPECT_EQ(cal->file_json, "{\"refit\": 1}");
}

// A lock held past Open's patience (30 s): the file is in use, UNAVAILABLE, and still not moved
// aside.
TEST(SqliteStoreTest, ALockHeldPastThePatienceIsUnavailableNotMovedAside) {
  TempDir dir;
  const std::string path = dir.File("spool.db");
  ASSERT_TRUE(SqliteStore::Open(path).ok());
  WriteLockHolder other(path);
  ASSERT_TRUE(other.ok());
  FakeClock clock;
  const absl::Time start = clock.Now();
  auto second = SqliteStore::Open(path, clock);
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("locked by another process"), std::string::npos)
      << second.status();
  EXPECT_GE(clock.Now() - start, absl::Seconds(30));
  EXPECT_LT(clock.Now() - start, absl::Seconds(32));
  EXPECT_EQ(MovedAside(dir.path()), 0);
}

// Once open, a statement waits 5 s on the store's clock for another connection's lock: a store
// then fails (logged, never thrown) and works again when the lock is gone.
TEST(SqliteStoreTest, AnOpenStoreWaitsFiveSecondsOnALockThenFails) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  FakeClock clock;
  auto store = SqliteStore::Open(path, clock);
  ASSERT_TRUE(store.ok()) << store.status();
  GemmKey key{{512, 4096, 4096, 1}, Layout::kTN, DType::kBf16};
  v1::GemmTiming t = TimingOf(key);
  t.set_time_s(1e-4);
  {
    WriteLockHolder other(path);
    ASSERT_TRUE(other.ok());
    const absl::Time start = clock.Now();
    EXPECT_EQ((*store)->Store("h100-sxm", t), StoreOutcome::kLost);
    EXPECT_GE(clock.Now() - start, absl::Seconds(5));
    EXPECT_LT(clock.Now() - start, absl::Seconds(6));
  }
  EXPECT_EQ((*store)->Store("h100-sxm", t), StoreOutcome::kStored);
  EXPECT_EQ((*store)->Count(), 1);
}

// Replicas starting together on one host open a new spool at the same moment: each opens the
// same file, none takes another's lock for damage. The children start together when the parent
// closes a pipe they all read.
TEST(SqliteStoreTest, ProcessesOpeningANewFileTogetherAllShareIt) {
  TempDir dir;
  constexpr int kFiles = 10, kProcesses = 6;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir.File("spool-" + std::to_string(f) + ".db");
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    std::vector<pid_t> children;
    for (int i = 0; i < kProcesses; ++i) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(go[1]);
        char byte;
        (void)!read(go[0], &byte, 1);  // returns when the parent closes its end
        auto store = SqliteStore::Open(path);
        _exit(store.ok() && (*store)->moved_aside().empty() ? 0 : 1);
      }
      children.push_back(pid);
    }
    close(go[0]);
    close(go[1]);
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

// A file that is not a database at all is still moved aside, named by the store's clock, and
// replaced at once.
TEST(SqliteStoreTest, AFileThatIsNotADatabaseIsMovedAside) {
  TempDir dir;
  const std::string path = dir.File("spool.db");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a database, but long enough to have a header of some sort......", f);
    std::fclose(f);
  }
  FakeClock clock;
  auto store = SqliteStore::Open(path, clock);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->moved_aside(),
            absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(clock.Now())));
  EXPECT_TRUE(std::filesystem::exists((*store)->moved_aside()));
  EXPECT_EQ(MovedAside(dir.path()), 1);
  EXPECT_EQ((*store)->Count(), 0);
}

}  // namespace
}  // namespace wavecrest
