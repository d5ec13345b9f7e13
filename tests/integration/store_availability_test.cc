// A replica available whatever its database does (issue 52, items 4 and 5): it starts while
// PostgreSQL is down and serves predictions and its spool, then connects, migrates and drains
// when the database answers; a slow query is not an outage; an admin export during a freeze
// holds no callback thread, so health and Analyze answer at once. Each test runs a throwaway
// PostgreSQL cluster (tests/integration/postgres.h).
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/advisor_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/measurement_store.h"
#include "server/pg_store.h"
#include "tests/integration/fleet.h"
#include "tests/integration/postgres.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using testing::Fast;
using testing::Gemms;
using testing::Key;
using testing::Measured;
using testing::Metrics;
using testing::MetricValue;
using testing::ServerUnderTest;
using testing::SlowWorker;
using testing::TempDir;
using testing::TempPostgres;
using testing::WaitFor;

constexpr char kMethod[] = "cublaslt-timing-v2 cold-L2 heuristic";

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A store opened while its database is down: an error for a tool (copy-store), a store that is
// down for a server, which spools, then migrates the (new, empty) database and drains into it
// when it answers. What no waiting can cure (no such database) fails at once either way.
TEST(StoreAvailabilityTest, AStoreOpenedWithoutItsDatabaseMigratesAndDrainsWhenItAnswers) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("late");
  pg.Stop("fast");
  auto tool = OpenStore(uri, "copy:1", Fast());
  EXPECT_EQ(tool.status().code(), absl::StatusCode::kUnavailable) << tool.status();
  StoreOptions serving = Fast(dir.File("spool.db"));
  serving.start_unavailable = true;
  auto store = OpenStore(uri, "a:1", serving);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*store)->Available());
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
  }
  EXPECT_TRUE((*store)->Lookup("h100-sxm", Key(3), kMethod, nullptr)) << "found in the spool";
  EXPECT_EQ((*store)->Backlog(), 5);
  ASSERT_TRUE(pg.Start());
  EXPECT_TRUE(WaitFor([&] { return (*store)->Available(); }));
  EXPECT_TRUE(WaitFor([&] { return (*store)->Backlog() == 0; }));
  EXPECT_EQ(pg.Rows("late"), 5);
  EXPECT_EQ(pg.Psql("late", "SELECT MAX(version) FROM wavecrest_schema"),
            absl::StrCat(kPgSchemaVersion, "\n"));
  EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(6), 1e-4)), StoreOutcome::kStored);

  auto missing = OpenStore(pg.Uri("no_such_database"), "a:2", serving);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition) << missing.status();
}

// A replica started while PostgreSQL is down starts, answers Analyze and predictions at once,
// says NOT_SERVING for measuring, keeps what its worker measures in its spool (and says so on
// each result), and when the database comes up migrates it, serves measuring and drains.
TEST(StoreAvailabilityTest, AReplicaStartsWhileTheDatabaseIsDownAndDrainsWhenItComesUp) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("startdown");
  SlowWorker worker(0);
  ASSERT_GT(worker.port(), 0);
  pg.Stop("fast");
  ServerUnderTest server({"--store=" + uri, "--worker_address=" + worker.address(),
                          "--store_timeout_ms=500"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("store unreachable at start"));
  EXPECT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "NOT_SERVING"));
  EXPECT_EQ(MetricValue(Metrics(server.metrics_port()), "wavecrest_store_up", {}), 0);
  AdvisorClient client(server.address(), absl::Seconds(10));
  v1::AnalyzeRequest analyze;
  analyze.set_gpu("h100-sxm");
  analyze.mutable_model()->set_hidden_size(2560);
  analyze.mutable_model()->set_num_attention_heads(32);
  analyze.mutable_model()->set_num_layers(32);
  analyze.mutable_model()->set_vocab_size(50304);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(client.Analyze(analyze).ok());
  v1::TimeGemmsRequest predicted = Gemms(3);
  predicted.set_mode(v1::MODE_PREDICTED);
  EXPECT_TRUE(client.TimeGemms(predicted, [](const v1::TimeGemmsResponse&) {}).ok());
  const double answered = SecondsSince(t0);
  EXPECT_LT(answered, 1.0);
  int spooled = 0;
  ASSERT_TRUE(client.TimeGemms(Gemms(4), [&](const v1::TimeGemmsResponse& m) {
                    spooled += m.has_timing() && m.timing().provenance().storage() ==
                                                     v1::STORAGE_FATE_SPOOLED;
                  }).ok());
  EXPECT_EQ(spooled, 4);
  EXPECT_TRUE(WaitFor([&] {
    return MetricValue(Metrics(server.metrics_port()), "wavecrest_store_backlog", {}) == 4;
  }));
  ASSERT_TRUE(pg.Start());
  EXPECT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING", absl::Seconds(15)));
  EXPECT_TRUE(WaitFor([&] {
    return MetricValue(Metrics(server.metrics_port()), "wavecrest_store_backlog", {}) == 0;
  }));
  EXPECT_EQ(pg.Rows("startdown"), 4);
  std::printf("database down at start: Analyze and a predicted TimeGemms answered in %.2f s\n",
              answered);
}

// A statement that passes the store's timeout on a database that answers (a table locked by
// someone else here; a COUNT over millions of rows once) fails alone: the store is not marked
// down, and the next operation after the lock works.
TEST(StoreAvailabilityTest, ASlowQueryIsNotAnOutage) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("slow");
  auto store = OpenStore(uri, "a:1", Fast(dir.File("spool.db")));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->Store("h100-sxm", Measured(Key(1), 1e-4)), StoreOutcome::kStored);
  std::thread locker([&] {
    pg.Psql("slow", "BEGIN; LOCK TABLE results IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); "
                    "COMMIT;");
  });
  ASSERT_TRUE(WaitFor([&] {
    return pg.Psql("slow", "SELECT COUNT(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' "
                           "AND relation = 'results'::regclass") == "1\n";
  }));
  int down = 0;
  std::vector<StoreOutcome> outcomes;
  for (int i = 2; i <= 3; ++i) {
    outcomes.push_back((*store)->Store("h100-sxm", Measured(Key(i), 1e-4)));
    down += !(*store)->Available();
  }
  EXPECT_FALSE((*store)->Lookup("h100-sxm", Key(1), kMethod, nullptr)) << "the lock was gone";
  down += !(*store)->Available();
  locker.join();
  EXPECT_EQ(down, 0) << "a slow statement marked a healthy database down";
  // Not taken in time, so kept in the spool (and drained once the lock is gone).
  EXPECT_EQ(outcomes, std::vector<StoreOutcome>(2, StoreOutcome::kSpooled));
  EXPECT_TRUE((*store)->Lookup("h100-sxm", Key(1), kMethod, nullptr));
  EXPECT_TRUE(WaitFor([&] { return (*store)->Backlog() == 0; }));
  EXPECT_EQ(pg.Rows("slow"), 3);
}

// An admin ExportMeasurements while the database is frozen runs on a job thread under its own
// deadline: health and Analyze keep answering within a second, and the export ends (the store
// found down, or its deadline) instead of holding a thread for the whole freeze.
TEST(StoreAvailabilityTest, AnExportDuringAFreezeDelaysNeitherHealthNorAnalyze) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("export");
  ServerUnderTest server({"--store=" + uri, "--store_timeout_ms=1000", "--threads=2"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  pg.Freeze();
  // Either end is right: the store found down (about 2 s), or the call's own deadline (8 s) when
  // a loaded machine delays the probe that finds it down.
  auto export_call = std::async(std::launch::async, [&] {
    AdvisorClient admin(server.address(), absl::Seconds(8));
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> csv = admin.ExportMeasurements(v1::ExportMeasurementsRequest());
    return std::make_pair(csv.status(), SecondsSince(t0));
  });
  AdvisorClient client(server.address(), absl::Seconds(10));
  v1::AnalyzeRequest analyze;
  analyze.set_gpu("h100-sxm");
  analyze.mutable_model()->set_hidden_size(2048);
  analyze.mutable_model()->set_num_attention_heads(16);
  analyze.mutable_model()->set_num_layers(24);
  analyze.mutable_model()->set_vocab_size(50304);
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(client.Health("").ok());
    EXPECT_TRUE(client.Analyze(analyze).ok());
    worst = std::max(worst, SecondsSince(t0));
    absl::SleepFor(absl::Milliseconds(200));
  }
  const auto [status, export_s] = export_call.get();
  pg.Thaw();
  std::printf("export during a freeze: health + Analyze at worst %.2f s; the export ended after "
              "%.1f s (%s)\n",
              worst, export_s, status.ToString().c_str());
  EXPECT_LT(worst, 1.0);
  EXPECT_FALSE(status.ok()) << "an export of a frozen database cannot have read it";
  EXPECT_LT(export_s, 12.0);
}

}  // namespace
}  // namespace wavecrest
