// One libpq connection under a deadline, and the statement helpers (server/pg_connection.h).
// Without a server: the SQL literals a statement is built with, a refused connection (an error,
// not a timeout), and a deadline the connection's clock has passed (a timeout at once, never a
// wait). With the shared test cluster: a statement's own error is a result, a long read whose
// condition turns false is given up as a timeout.
#if WAVECREST_WITH_POSTGRES
#include "server/pg_connection.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"
#include "tests/server/shared_postgres.h"

namespace wavecrest::pg {
namespace {

TEST(PgConnectionTest, ResultsAreOkWhenACommandIsDoneOrRowsCame) {
  for (ExecStatusType s : {PGRES_COMMAND_OK, PGRES_TUPLES_OK}) {
    Result r(PQmakeEmptyPGresult(nullptr, s));
    EXPECT_TRUE(Ok(r.get())) << PQresStatus(s);
  }
  for (ExecStatusType s : {PGRES_FATAL_ERROR, PGRES_BAD_RESPONSE, PGRES_EMPTY_QUERY}) {
    Result r(PQmakeEmptyPGresult(nullptr, s));
    EXPECT_FALSE(Ok(r.get())) << PQresStatus(s);
  }
}

TEST(PgConnectionTest, LiteralsForStatements) {
  google::protobuf::Timestamp t;
  EXPECT_EQ(Seconds(t), "") << "a time never set is stored as now";
  t.set_seconds(1764000000);
  t.set_nanos(5);
  EXPECT_EQ(Seconds(t), "1764000000.000000005");
  EXPECT_EQ(TextArray({}), "{}");
  EXPECT_EQ(TextArray({"b", "a"}), "{\"a\",\"b\"}");
  EXPECT_EQ(TextArray({"say \"hi\"", "back\\slash"}), "{\"back\\\\slash\",\"say \\\"hi\\\"\"}");
  EXPECT_EQ(SecondsText(absl::Milliseconds(1500)), "1.5");
  EXPECT_EQ(SecondsText(absl::Seconds(10)), "10");
  EXPECT_EQ(Int(-42).value, "-42");
  EXPECT_FALSE(Text("x").binary);
  EXPECT_TRUE(Bytes(std::string("\0\1", 2)).binary);
  const Statement plain = "SELECT 1";
  EXPECT_EQ(plain.sql, "SELECT 1");
  EXPECT_TRUE(plain.params.empty());
  EXPECT_FALSE(plain.binary_results || plain.script);
}

// Nothing listens on port 1: refused, which is no timeout (the store is down, not slow).
TEST(PgConnectionTest, ARefusedConnectionIsAnErrorNotATimeout) {
  FakeClock clock;
  Connection c("postgresql://wavecrest@127.0.0.1:1/wc", clock);
  EXPECT_FALSE(c.Connect(clock.Now() + absl::Seconds(2)));
  EXPECT_FALSE(c.ok());
  EXPECT_FALSE(c.timed_out());
  EXPECT_TRUE(absl::StartsWith(c.error(), "cannot connect")) << c.error();
  EXPECT_EQ(c.Exec({"SELECT 1"}, clock.Now() + absl::Seconds(2)), nullptr);
  EXPECT_FALSE(c.timed_out());
}

// A server that accepts and never answers, with a deadline the connection's clock has already
// passed: a timeout at once (the server may be slow), not a refusal, and no wait.
TEST(PgConnectionTest, ADeadlineTheClockHasPassedTimesOutAtOnce) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof(a);
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  FakeClock clock;
  Connection c(absl::StrCat("postgresql://wavecrest@127.0.0.1:", ntohs(a.sin_port), "/wc"),
               clock);
  EXPECT_FALSE(c.Connect(clock.Now()));
  EXPECT_TRUE(c.timed_out());
  EXPECT_EQ(c.error(), "connecting: no answer within the store's timeout");
  close(listener);
}

TEST(PgConnectionTest, StatementsOnALiveServer) {
  SKIP_WITHOUT_POSTGRES(testing::SharedPostgres());
  FakeClock clock;
  Connection c(testing::NewTestDatabase(), clock);
  const absl::Time deadline = clock.Now() + absl::Seconds(30);
  ASSERT_TRUE(c.Connect(deadline)) << c.error();
  Result one = c.Exec({"SELECT $1::int + 1", {Int(41)}}, deadline);
  ASSERT_NE(one, nullptr) << c.error();
  ASSERT_TRUE(Ok(one.get()));
  EXPECT_STREQ(PQgetvalue(one.get(), 0, 0), "42");
  // A statement's own error is a result (the connection is fine), the first of a script's.
  Result bad = c.Exec({"SELECT 1; SELECT * FROM no_such_table; SELECT 2", {}, false, true},
                      deadline);
  ASSERT_NE(bad, nullptr) << c.error();
  EXPECT_FALSE(Ok(bad.get()));
  EXPECT_TRUE(absl::StrContains(PQresultErrorMessage(bad.get()), "no_such_table"));
  EXPECT_TRUE(c.ok());
  // A long read whose condition is false (its store went down meanwhile) is given up.
  const std::atomic<bool> store_up{false};
  EXPECT_EQ(c.Exec({"SELECT pg_sleep(30)"}, deadline, &store_up), nullptr);
  EXPECT_TRUE(c.timed_out());
  EXPECT_FALSE(c.ok()) << "a connection given up is dropped";
  // And connects again for the next statement.
  Result again = c.Exec({"SELECT 1"}, deadline);
  EXPECT_TRUE(again && Ok(again.get())) << c.error();
}

}  // namespace
}  // namespace wavecrest::pg

#else
#include "gtest/gtest.h"

TEST(PgConnectionTest, BuiltWithoutPostgres) {
  GTEST_SKIP() << "this build has no PostgreSQL (libpq-dev was not found at build time)";
}
#endif  // WAVECREST_WITH_POSTGRES
