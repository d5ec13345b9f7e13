// The PostgreSQL store's life and faults (server/pg_store.h, pg_store.cc). Without a server: the
// background thread's timetable on a fake clock, a database that cannot be reached at start (an
// error for copy-store; a store that starts down and answers at once for a server), and a URI
// that can never work. With the shared test cluster: opening migrates, and a lookup whose
// deadline the store's clock has passed misses at once, without asking the database.
#if WAVECREST_WITH_POSTGRES
#include "server/pg_store.h"

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"
#include "tests/integration/fleet.h"
#include "tests/server/shared_postgres.h"

namespace wavecrest {
namespace {

using testing::Key;
using testing::Measured;

constexpr char kUnreachablePg[] = "postgresql://wavecrest:s3cret@127.0.0.1:1/wc";

TEST(PgStoreTest, TheBackgroundThreadWakesForItsShortestChore) {
  StoreOptions o;
  EXPECT_EQ(pg::BackgroundTick(o), absl::Milliseconds(250));
  o.probe_every = absl::Milliseconds(100);
  EXPECT_EQ(pg::BackgroundTick(o), absl::Milliseconds(100));
  o.probe_every = absl::Seconds(1);
  o.claim_lease = absl::Milliseconds(300);
  EXPECT_EQ(pg::BackgroundTick(o), absl::Milliseconds(100));
}

TEST(PgStoreTest, ClaimsAreRenewedEveryThirdOfTheShortestLease) {
  StoreOptions o;  // claim_lease 10 s
  EXPECT_EQ(pg::RenewEvery(o, std::nullopt), absl::Seconds(10) / 3);
  EXPECT_EQ(pg::RenewEvery(o, absl::Seconds(3)), absl::Seconds(1));
  EXPECT_EQ(pg::RenewEvery(o, absl::Seconds(60)), absl::Seconds(10) / 3);
}

// A chore (a sweep, a recount, a renewal) runs the first time, then once `every` has passed on
// the store's clock since it last ran.
TEST(PgStoreTest, AChoreIsDueOnceItsPeriodHasPassedOnTheClock) {
  FakeClock clock;
  absl::Time last = absl::InfinitePast();
  EXPECT_TRUE(pg::TakeIfDue(last, clock.Now(), absl::Seconds(10)));
  EXPECT_EQ(last, clock.Now());
  EXPECT_FALSE(pg::TakeIfDue(last, clock.Now(), absl::Seconds(10)));
  clock.Advance(absl::Seconds(10) - absl::Milliseconds(1));
  EXPECT_FALSE(pg::TakeIfDue(last, clock.Now(), absl::Seconds(10)));
  const absl::Time before = last;
  EXPECT_EQ(last, before) << "a chore not due is not marked";
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(pg::TakeIfDue(last, clock.Now(), absl::Seconds(10)));
  EXPECT_EQ(last, clock.Now());
}

// copy-store: a database that cannot be reached is an error, naming it without its password.
TEST(PgStoreTest, AnUnreachableDatabaseIsAnErrorAtOpen) {
  FakeClock clock;
  StoreOptions o;
  o.clock = &clock;
  auto store = PgStore::Open(kUnreachablePg, "host:1", o);
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(absl::IsUnavailable(store.status())) << store.status();
  EXPECT_TRUE(absl::StrContains(store.status().message(), "wavecrest:***@127.0.0.1:1"));
  EXPECT_FALSE(absl::StrContains(store.status().message(), "s3cret"));
}

// A server: the store starts down and every operation answers at once (a miss, a loss, "measure
// here") until the database answers.
TEST(PgStoreTest, AServerStartsWithoutItsDatabaseAndAnswersAtOnce) {
  FakeClock clock;
  StoreOptions o;
  o.clock = &clock;
  o.start_unavailable = true;
  auto store = PgStore::Open(kUnreachablePg, "host:1", o);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->Available());
  EXPECT_TRUE((*store)->Shared());
  EXPECT_EQ((*store)->Describe(), "postgresql://wavecrest:***@127.0.0.1:1/wc");
  EXPECT_FALSE((*store)->Lookup("h100-sxm", Key(1), "m", nullptr));
  EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(1), 1e-4)), StoreOutcome::kLost);
  EXPECT_TRUE((*store)->Claim("gemm-1", absl::Seconds(10))) << "nobody to ask: measure here";
  EXPECT_EQ((*store)->Count(), 0);
  EXPECT_FALSE((*store)->PublishCalibration("{}", "host:1").ok());
  EXPECT_FALSE((*store)->LatestCalibration().has_value());
  EXPECT_FALSE((*store)->MeasurementsBy("", clock.Now() + absl::Seconds(1)).ok());
  EXPECT_EQ((*store)->SchemaVersion(), 0);
}

// A URI that can never work is an error even for a server that may start without its database.
TEST(PgStoreTest, AUriThatCanNeverWorkIsAnErrorEvenWhenStartingDown) {
  StoreOptions o;
  o.start_unavailable = true;
  auto store = PgStore::Open("postgresql://wavecrest@127.0.0.1:1/wc?sslmode=bogus", "host:1", o);
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
}

// The database answers; a layer lookup that must answer by a deadline the store's clock has
// already passed (a callback thread's) misses without asking it.
TEST(PgStoreTest, ALookupPastItsDeadlineOnTheStoresClockMissesAtOnce) {
  SKIP_WITHOUT_POSTGRES(testing::SharedPostgres());
  FakeClock clock;
  StoreOptions o = testing::Fast();
  o.clock = &clock;
  auto store = PgStore::Open(testing::NewTestDatabase(), "host:1", o);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Available());
  EXPECT_EQ((*store)->SchemaVersion(), kPgSchemaVersion);
  LayerKey key;
  v1::LayerTiming layer;
  layer.set_key(LayerKeyString(key));
  layer.mutable_provenance()->set_method("layer-v1");
  ASSERT_EQ((*store)->StoreLayer("h100-sxm", layer), StoreOutcome::kStored);
  EXPECT_TRUE((*store)->LookupLayer("h100-sxm", key, "layer-v1", nullptr).has_value());
  EXPECT_TRUE((*store)
                  ->LookupLayerBy("h100-sxm", key, "layer-v1", nullptr,
                                  clock.Now() + absl::Seconds(1))
                  .has_value());
  EXPECT_FALSE(
      (*store)->LookupLayerBy("h100-sxm", key, "layer-v1", nullptr, clock.Now()).has_value());
  EXPECT_TRUE((*store)->Available()) << "a deadline passed is no outage";
}

}  // namespace
}  // namespace wavecrest

#else
#include "gtest/gtest.h"

TEST(PgStoreTest, BuiltWithoutPostgres) {
  GTEST_SKIP() << "this build has no PostgreSQL (libpq-dev was not found at build time)";
}
#endif  // WAVECREST_WITH_POSTGRES
