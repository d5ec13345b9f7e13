// A spool's bookkeeping in its SQLite file (server/spool_file.cc): the store it spools for, the
// leases of the processes using it (live ones counted, ended ones removed by the next renewal),
// and what a look at a spool file finds. A file that is not a spool is reported as none, never
// opened for writing or moved aside. Leases are read against a fake clock's now.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/sqlite_store.h"
#include "service/convert.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::TempDir;

TEST(SpoolFileTest, LeasesAndALookAtASpoolFile) {
  TempDir dir;
  const std::string path = dir.File("spool-a.db");
  FakeClock clock;
  const absl::Time now = clock.Now();
  {
    auto spool = SqliteStore::Open(path, clock);
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
  EXPECT_TRUE(std::filesystem::exists(junk)) << "a file that is no spool was moved";
  EXPECT_FALSE(std::filesystem::exists(dir.File("spool-missing.db")));
}

// A lease is live up to its last millisecond, and ended one millisecond later: what a replica
// deciding whether to adopt a spool sees as its clock moves on.
TEST(SpoolFileTest, ALeaseIsLiveUntilItsEnd) {
  TempDir dir;
  const std::string path = dir.File("spool-b.db");
  FakeClock clock;
  auto spool = SqliteStore::Open(path, clock);
  ASSERT_TRUE(spool.ok()) << spool.status();
  const absl::Time until = clock.Now() + absl::Seconds(30);
  ASSERT_TRUE((*spool)->RenewLease("host:1", until, clock.Now()));
  clock.Advance(absl::Seconds(30));
  EXPECT_EQ(InspectSpoolFile(path, clock.Now())->live_leases, 1);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(InspectSpoolFile(path, clock.Now())->live_leases, 0);
  // Another process's renewal at this time removes the ended lease.
  ASSERT_TRUE((*spool)->RenewLease("host:2", clock.Now() + absl::Seconds(30), clock.Now()));
  EXPECT_FALSE((*spool)->Meta("lease:host:1").has_value());
  EXPECT_TRUE((*spool)->Meta("lease:host:2").has_value());
  EXPECT_EQ(InspectSpoolFile(path, clock.Now())->live_leases, 1);
}

// A SQLite file of another program is no spool.
TEST(SpoolFileTest, AForeignDatabaseIsNoSpool) {
  TempDir dir;
  const std::string path = dir.File("spool-foreign.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE meta (key TEXT, value TEXT); "
                             "INSERT INTO meta VALUES ('schema', 'someone-else-v1');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  FakeClock clock;
  EXPECT_FALSE(InspectSpoolFile(path, clock.Now()).has_value());
}

}  // namespace
}  // namespace wavecrest
