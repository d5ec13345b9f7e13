// The spool in front of a shared store (server/spooled_store.h), without PostgreSQL: the shared
// store is a SQLite file behind a switch that takes it "down". What a spool holds is drained by
// whichever replica can, whoever wrote it (a spool file shared by the replicas of one host), a
// spool whose replicas are gone is adopted and drained, and the backlog counts every row of every
// spool a replica holds (issue 52, item 4). Drain() runs the background thread's round on the
// test's thread (the thread itself waits an hour here), so nothing races the test; leases run on
// a fake clock the test moves, so nothing sleeps.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/spooled_store.h"
#include "server/sqlite_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/fleet.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using testing::Key;
using testing::Measured;
using testing::TempDir;

constexpr char kStore[] = "postgresql://wavecrest@db:5432/test";

// One replica's view of the shared database: `db` (shared by every replica of a test), reachable
// while `up`.
class SwitchedStore final : public MeasurementStore {
 public:
  SwitchedStore(SqliteStore* db, std::atomic<bool>* up) : db_(db), up_(up) {}
  std::optional<v1::GemmTiming> Lookup(absl::string_view kind, const GemmKey& key,
                                       absl::string_view method,
                                       const v1::DeviceFingerprint* fp) override {
    if (!up_->load()) return std::nullopt;
    return db_->Lookup(kind, key, method, fp);
  }
  StoreOutcome Store(absl::string_view kind, const v1::GemmTiming& t) override {
    return up_->load() ? db_->Store(kind, t) : StoreOutcome::kLost;
  }
  std::string Describe() const override { return kStore; }
  int64_t Count() override { return db_->Count(); }
  void OnCount(std::function<void(int64_t)>) override {}
  std::vector<std::pair<std::string, v1::GemmTiming>> Measurements(absl::string_view) override {
    return {};
  }
  absl::StatusOr<int64_t> PublishCalibration(const std::string&, const std::string&) override {
    return absl::UnavailableError("not here");
  }
  std::optional<StoredCalibration> LatestCalibration() override { return std::nullopt; }
  bool Shared() const override { return true; }
  void ForEach(const std::function<void(const std::string&, const v1::GemmTiming&)>&,
               const std::function<void(const std::string&, const v1::LayerTiming&)>&) override {}
  bool Available() const override { return up_->load(); }

 private:
  SqliteStore* db_;
  std::atomic<bool>* up_;
};

class SpooledStoreTest : public ::testing::Test {
 protected:
  SpooledStoreTest() : db_(*SqliteStore::Open(dir_.File("shared.db"), clock_)) {}

  // A replica named `owner` spooling into `spool` (a file of dir_), its database reachable
  // while `up`.
  std::unique_ptr<SpooledStore> Replica(const std::string& owner, const std::string& spool,
                                        std::atomic<bool>* up,
                                        absl::Duration lease = absl::Seconds(30)) {
    StoreOptions o;
    o.drain_every = absl::Hours(1);  // rounds run when the test calls Drain()
    o.spool_lease = lease;
    o.clock = &clock_;
    return std::make_unique<SpooledStore>(std::make_unique<SwitchedStore>(db_.get(), up),
                                          *SqliteStore::Open(dir_.File(spool), clock_), o, owner);
  }

  // The shared store holds the results of these keys and nothing else.
  void ExpectStoreHoldsExactly(const std::vector<int>& keys) {
    EXPECT_EQ(db_->Count(), static_cast<int64_t>(keys.size()));
    for (int i : keys) {
      EXPECT_TRUE(db_->Lookup("h100-sxm", Key(i), "cublaslt-timing-v2 cold-L2 heuristic", nullptr))
          << "acknowledged result " << i << " is not in the store";
    }
  }

  TempDir dir_;
  FakeClock clock_;  // every replica's and spool's
  std::unique_ptr<SqliteStore> db_;
};

// Two replicas share one spool file (the default path); one is cut off from the database and
// spools, the other is not. The other's rounds count what the first left and drain it: the
// issue's 214 results that stayed in a shared spool forever with a backlog of 0.
TEST_F(SpooledStoreTest, ASharedSpoolIsDrainedAndCountedByAnyReplica) {
  std::atomic<bool> a_up{false}, b_up{false};
  auto a = Replica("host:1", "spool-shared.db", &a_up);
  auto b = Replica("host:2", "spool-shared.db", &b_up);
  for (int i = 1; i <= 20; ++i) {
    ASSERT_EQ(a->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
  }
  EXPECT_EQ(a->Backlog(), 20);
  EXPECT_EQ(b->Backlog(), 0) << "b has not looked yet";
  EXPECT_EQ(b->Drain(), 0);  // b's database is down too: nothing copied, but counted
  EXPECT_EQ(b->Backlog(), 20);
  a.reset();  // a is gone for good
  b_up = true;
  EXPECT_EQ(b->Drain(), 20);
  EXPECT_EQ(b->Backlog(), 0);
  EXPECT_EQ(db_->Count(), 20);
  EXPECT_TRUE(db_->Lookup("h100-sxm", Key(20), "cublaslt-timing-v2 cold-L2 heuristic", nullptr));
}

// A replica with a private spool path was killed during an outage: its file holds results and a
// lease that is no longer renewed. Once the lease ends, a live replica with a spool in the same
// directory adopts the file, counts it in its backlog, drains it and lets it go. A spool of
// another store, and one whose replica is alive, are left alone.
TEST_F(SpooledStoreTest, AnOrphanedSpoolIsAdoptedOnceItsLeaseEnds) {
  const absl::Duration dead_lease = absl::Seconds(3);
  {
    // What a killed replica leaves: rows, the store it spooled for, and its last lease.
    auto dead = *SqliteStore::Open(dir_.File("spool-dead.db"));
    for (int i = 1; i <= 10; ++i) dead->Store("h100-sxm", Measured(Key(i), 1e-4));
    dead->SetMetaIfAbsent("store", kStore);
    ASSERT_TRUE(dead->RenewLease("host:66", clock_.Now() + dead_lease, clock_.Now()));
    auto other = *SqliteStore::Open(dir_.File("spool-other.db"));
    other->Store("h100-sxm", Measured(Key(99), 1e-4));
    other->SetMetaIfAbsent("store", "postgresql://elsewhere/other");
  }
  std::atomic<bool> alive_up{false}, up{true};
  auto alive = Replica("host:7", "spool-alive.db", &alive_up);
  ASSERT_EQ(alive->Store("h100-sxm", Measured(Key(50), 1e-4)), StoreOutcome::kSpooled);
  auto live = Replica("host:8", "spool-live.db", &up, absl::Milliseconds(300));

  live->Drain();
  EXPECT_EQ(live->Backlog(), 0) << "adopted a spool whose lease had not ended";
  EXPECT_EQ(db_->Count(), 0);
  // The lease's last moment: still live.
  clock_.Advance(dead_lease);
  live->Drain();
  EXPECT_EQ(db_->Count(), 0) << "adopted a spool at the last moment of its lease";
  // The next look for orphans (a third of the live replica's lease on) finds it ended.
  clock_.Advance(absl::Milliseconds(100));
  live->Drain();
  EXPECT_EQ(db_->Count(), 10) << "the orphaned spool was not drained";
  EXPECT_EQ(live->Backlog(), 0);
  // Drained and let go; the other store's spool and the live replica's are untouched.
  auto dead = *SqliteStore::Open(dir_.File("spool-dead.db"));
  EXPECT_EQ(dead->Count(), 0);
  auto other = InspectSpoolFile(dir_.File("spool-other.db"), clock_.Now());
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->rows, 1);
  EXPECT_EQ(alive->Backlog(), 1);
  EXPECT_FALSE(db_->Lookup("h100-sxm", Key(50), "cublaslt-timing-v2 cold-L2 heuristic", nullptr));
}

// While an orphan cannot be drained (the database is down here too), it is in the backlog.
TEST_F(SpooledStoreTest, AnAdoptedSpoolCountsInTheBacklogUntilDrained) {
  {
    auto dead = *SqliteStore::Open(dir_.File("spool-dead.db"));
    for (int i = 1; i <= 7; ++i) dead->Store("h100-sxm", Measured(Key(i), 1e-4));
    dead->SetMetaIfAbsent("store", kStore);
    // Stopped cleanly with the database down: no lease left, the rows still there.
  }
  std::atomic<bool> up{false};
  auto live = Replica("host:8", "spool-live.db", &up);
  ASSERT_EQ(live->Store("h100-sxm", Measured(Key(40), 1e-4)), StoreOutcome::kSpooled);
  live->Drain();
  EXPECT_EQ(live->Backlog(), 8);
  auto info = InspectSpoolFile(dir_.File("spool-dead.db"), clock_.Now());
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->live_leases, 1) << "the adopter holds a lease on what it adopted";
  up = true;
  EXPECT_EQ(live->Drain(), 8);
  EXPECT_EQ(live->Backlog(), 0);
  EXPECT_EQ(db_->Count(), 8);
  info = InspectSpoolFile(dir_.File("spool-dead.db"), clock_.Now());
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->live_leases, 0) << "a drained spool is let go";
}

// Runs `sql` on a spool file as another process would (the spool's own connection stays open);
// false when SQLite refuses it.
bool OnSpoolFile(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

constexpr char kFullDisk[] =
    "CREATE TRIGGER full_disk BEFORE INSERT ON results BEGIN "
    "SELECT RAISE(FAIL, 'database or disk is full'); END;";

// The database down and the spool's disk full (a trigger that fails every insert as SQLite's
// "database or disk is full" does): what the spool took is acknowledged as spooled, what it could
// not take is said lost as it is stored (the answer's NOT_STORED, tests/server/advisor_service_test.cc), never
// acknowledged. The backlog counts only what the spool holds. The replica then goes, its spool
// left with rows; once the disk has room again another replica adopts the file and the store ends
// with exactly what was acknowledged (the adoption of a spool whose replica was killed, its lease
// left to run out, is AnOrphanedSpoolIsAdoptedOnceItsLeaseEnds).
TEST_F(SpooledStoreTest, AFullSpoolDiskSaysWhatWasLostAndLosesNothingAcknowledged) {
  std::atomic<bool> down{false}, up{false};
  auto a = Replica("host:1", "spool-a.db", &down);
  std::vector<int> acknowledged, said_lost;
  for (int i = 1; i <= 5; ++i) {
    ASSERT_EQ(a->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
    acknowledged.push_back(i);
  }
  ASSERT_TRUE(OnSpoolFile(dir_.File("spool-a.db"), kFullDisk));
  for (int i = 6; i <= 10; ++i) {
    const StoreOutcome o = a->Store("h100-sxm", Measured(Key(i), 1e-4));
    EXPECT_EQ(o, StoreOutcome::kLost) << "result " << i;
    (o == StoreOutcome::kSpooled ? acknowledged : said_lost).push_back(i);
  }
  EXPECT_EQ(said_lost.size(), 5u);
  EXPECT_EQ(a->Backlog(), 5) << "the backlog is what the spool holds";
  a.reset();
  ASSERT_TRUE(OnSpoolFile(dir_.File("spool-a.db"), "DROP TRIGGER full_disk;"));
  up = true;
  auto b = Replica("host:2", "spool-b.db", &up);
  b->Drain();  // adopts spool-a.db (no live lease, results for this store)
  b->Drain();
  EXPECT_EQ(b->Backlog(), 0);
  ExpectStoreHoldsExactly(acknowledged);
}

// The same with the replica SIGKILLed (issue 52: "full spool disk with a killed replica"): a child
// process spools five results, finds the disk full for five more (each said lost as it is stored)
// and is killed, its lease left to run out. Once the disk has room, another replica adopts the
// spool when the lease ends and the store ends with exactly what the child acknowledged. The
// child's clock is the fixture's, forked: its lease ends 2 s after the test's now.
TEST_F(SpooledStoreTest, AKilledReplicaWithAFullSpoolDiskLosesNothingAcknowledged) {
  const std::string outcomes = dir_.File("outcomes.txt");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<bool> down{false};
    auto a = Replica("host:1", "spool-a.db", &down, absl::Seconds(2));
    FILE* out = std::fopen(outcomes.c_str(), "w");
    for (int i = 1; i <= 10; ++i) {
      if (i == 6 && !OnSpoolFile(dir_.File("spool-a.db"), kFullDisk)) _exit(3);
      const StoreOutcome o = a->Store("h100-sxm", Measured(Key(i), 1e-4));
      std::fprintf(out, "%d %d\n", i, static_cast<int>(o));
      std::fflush(out);
    }
    std::fclose(out);
    kill(getpid(), SIGKILL);  // no destructor, no lease ended: as a killed replica leaves it
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  std::vector<int> acknowledged, said_lost;
  std::ifstream in(outcomes);
  for (int i = 0, o = 0; in >> i >> o;) {
    if (o == static_cast<int>(StoreOutcome::kSpooled)) acknowledged.push_back(i);
    if (o == static_cast<int>(StoreOutcome::kLost)) said_lost.push_back(i);
  }
  EXPECT_EQ(acknowledged, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(said_lost, (std::vector<int>{6, 7, 8, 9, 10}));
  ASSERT_TRUE(OnSpoolFile(dir_.File("spool-a.db"), "DROP TRIGGER full_disk;"));
  std::atomic<bool> up{true};
  auto b = Replica("host:2", "spool-b.db", &up);
  b->Drain();
  EXPECT_EQ(db_->Count(), 0) << "adopted while the killed replica's lease ran";
  // Past the lease, and past b's next look for orphans (every third of its 30 s lease).
  clock_.Advance(absl::Seconds(11));
  b->Drain();  // adopts spool-a.db and drains it
  b->Drain();
  EXPECT_EQ(b->Backlog(), 0);
  ExpectStoreHoldsExactly(acknowledged);
}

}  // namespace
}  // namespace wavecrest
