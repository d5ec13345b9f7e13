// The PostgreSQL store's schema and its migrations (server/pg_schema.h). Without a server: which
// connection failures are worth trying again (UNAVAILABLE) and which are not
// (FAILED_PRECONDITION). With the shared test cluster: a new database is migrated to this
// server's version once, a second migration changes nothing, and a database a newer server
// migrated is refused.
#if WAVECREST_WITH_POSTGRES
#include "server/pg_schema.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/pg_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/server/shared_postgres.h"

namespace wavecrest::pg {
namespace {

TEST(PgSchemaTest, WhichConnectFailuresAreWorthTryingAgain) {
  EXPECT_TRUE(TransientConnectError("cannot connect: Connection refused"));
  EXPECT_TRUE(TransientConnectError("connecting: no answer within the store's timeout"));
  EXPECT_TRUE(TransientConnectError("FATAL: the database system is starting up"));
  EXPECT_FALSE(TransientConnectError("FATAL: password authentication failed for user \"x\""));
  EXPECT_FALSE(TransientConnectError("FATAL: database \"nope\" does not exist"));
  EXPECT_FALSE(TransientConnectError("FATAL: no pg_hba.conf entry for host"));
  EXPECT_FALSE(TransientConnectError("invalid sslmode value: \"bogus\""));
  EXPECT_FALSE(TransientConnectError("invalid connection option \"nope\""));
}

TEST(PgSchemaTest, AnUnreachableDatabaseIsUnavailableABadUriIsNot) {
  FakeClock clock;
  Connection refused("postgresql://wavecrest@127.0.0.1:1/wc", clock);
  absl::Status st = Migrate(refused, "postgresql://wavecrest@127.0.0.1:1/wc",
                            clock.Now() + absl::Seconds(2), clock.Now() + absl::Seconds(2));
  EXPECT_TRUE(absl::IsUnavailable(st)) << st;
  EXPECT_TRUE(absl::StartsWith(st.message(), "--store postgresql://wavecrest@127.0.0.1:1/wc: "))
      << st;
  Connection bad("postgresql://wavecrest@127.0.0.1:1/wc?sslmode=bogus", clock);
  st = Migrate(bad, "the store", clock.Now() + absl::Seconds(2), clock.Now() + absl::Seconds(2));
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_EQ(SchemaVersion(refused, clock.Now() + absl::Seconds(2)), 0);
}

TEST(PgSchemaTest, ADatabaseIsMigratedOnceAndANewerOneIsRefused) {
  SKIP_WITHOUT_POSTGRES(testing::SharedPostgres());
  const std::string uri = testing::NewTestDatabase();
  const std::string db = uri.substr(uri.rfind('/') + 1);
  FakeClock clock;
  Connection c(uri, clock);
  const absl::Time by = clock.Now() + absl::Seconds(30);
  EXPECT_EQ(SchemaVersion(c, by), 0) << "a new database has no schema";
  ASSERT_TRUE(Migrate(c, "test", by, by).ok());
  EXPECT_EQ(SchemaVersion(c, by), kPgSchemaVersion);
  ASSERT_TRUE(Migrate(c, "test", by, by).ok());
  EXPECT_EQ(testing::SharedPostgres().Rows(db, "wavecrest_schema"), kPgSchemaVersion);
  for (const char* table : {"results", "layer_results", "claims", "calibrations"}) {
    EXPECT_EQ(testing::SharedPostgres().Rows(db, table), 0) << table;
  }
  // A newer server migrated the database: this one refuses it, and leaves it as it is.
  testing::SharedPostgres().Psql(db, "INSERT INTO wavecrest_schema (version) VALUES (99)");
  const absl::Status st = Migrate(c, "test", by, by);
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "v99, newer than this server's")) << st;
  EXPECT_EQ(SchemaVersion(c, by), 99);
}

}  // namespace
}  // namespace wavecrest::pg

#else
#include "gtest/gtest.h"

TEST(PgSchemaTest, BuiltWithoutPostgres) {
  GTEST_SKIP() << "this build has no PostgreSQL (libpq-dev was not found at build time)";
}
#endif  // WAVECREST_WITH_POSTGRES
