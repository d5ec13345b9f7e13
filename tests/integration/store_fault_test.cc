// The shared store under faults (issue "Nothing crashes it, nothing it acknowledged is lost"): a
// throwaway PostgreSQL cluster frozen (SIGSTOP), stopped fast or as a crash, restarted, its disk
// "full" (a trigger that fails every write as a full disk does), migrated by a newer server, and
// one replica cut off from it by a TCP proxy while another keeps it. The store never blocks past
// its timeout, every acknowledged result is in the shared store afterwards or its answer says it
// is not, and claims end with their owner.
#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "client/advisor_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/measurement_store.h"
#include "server/pg_store.h"
#include "tests/integration/fleet.h"
#include "tests/integration/postgres.h"
#include "tests/integration/process.h"
#include "tests/integration/tcp_proxy.h"

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
using testing::TcpProxy;
using testing::TempDir;
using testing::TempPostgres;
using testing::WaitFor;

constexpr char kMethod[] = "cublaslt-timing-v2 cold-L2 heuristic";

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int64_t Rows(const TempPostgres& pg, const std::string& db) { return pg.Rows(db); }

// A frozen database costs one operation its timeout and a quick probe (which tells it from a
// slow query: StoreAvailabilityTest.ASlowQueryIsNotAnOutage); after that the store knows it is
// down and answers at once (a lookup misses, a store fails), and it is back soon after the
// database is.
TEST(StoreFaultTest, AFrozenDatabaseCostsOneTimeoutThenAnswersAtOnce) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("frozen");
  auto store = OpenStore(uri, "a:1", Fast());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_EQ((*store)->Store("h100-sxm", Measured(Key(1), 1e-4)), StoreOutcome::kStored);
  pg.Freeze();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE((*store)->Lookup("h100-sxm", Key(1), kMethod, nullptr));
  const double first = SecondsSince(t0);
  EXPECT_FALSE((*store)->Available());
  t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE((*store)->Lookup("h100-sxm", Key(1), kMethod, nullptr));
  EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(2), 1e-4)), StoreOutcome::kLost);
  EXPECT_TRUE((*store)->Claim("x", absl::Seconds(10)));  // nobody to ask: measure here
  (void)(*store)->Count();
  const double then = SecondsSince(t0);
  std::printf("frozen database: first lookup %.2f s (timeout 0.5 s, then a 0.5 s probe), then four "
              "operations %.3f s\n",
              first, then);
  EXPECT_LT(first, 1.5);
  EXPECT_LT(then, 0.2);
  pg.Thaw();
  EXPECT_TRUE(WaitFor([&] { return (*store)->Available(); }));
  EXPECT_TRUE((*store)->Lookup("h100-sxm", Key(1), kMethod, nullptr));
}

// Results handed to the store while its database is stopped (fast or as a crash), frozen or out
// of disk are spooled, found by lookups meanwhile, and all in the database once it is back.
TEST(StoreFaultTest, NothingAcknowledgedIsLostThroughStopsFreezesAndAFullDisk) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("faults");
  auto store = OpenStore(uri, "a:1", Fast(dir.File("spool.db")));
  ASSERT_TRUE(store.ok()) << store.status();
  struct Fault {
    const char* name;
    std::function<void()> start, end;
  };
  const char* kFull =
      "CREATE FUNCTION full_disk() RETURNS trigger AS \\$\\$ BEGIN RAISE EXCEPTION 'could not "
      "extend file: No space left on device' USING ERRCODE = 'disk_full'; END \\$\\$ LANGUAGE "
      "plpgsql; CREATE TRIGGER full_disk BEFORE INSERT OR UPDATE ON results FOR EACH ROW EXECUTE "
      "FUNCTION full_disk();";
  const std::vector<Fault> faults = {
      {"stop -m fast", [&] { pg.Stop("fast"); }, [&] { ASSERT_TRUE(pg.Start()); }},
      {"stop -m immediate", [&] { pg.Stop("immediate"); }, [&] { ASSERT_TRUE(pg.Start()); }},
      {"frozen", [&] { pg.Freeze(); }, [&] { pg.Thaw(); }},
      {"full disk", [&] { pg.Psql("faults", kFull); },
       [&] { pg.Psql("faults", "DROP TRIGGER full_disk ON results; DROP FUNCTION full_disk();"); }},
  };
  int next = 1;
  for (const Fault& f : faults) {
    const int64_t before = Rows(pg, "faults");
    f.start();
    int spooled = 0;
    const int first = next;
    for (int i = 0; i < 40; ++i, ++next) {
      const StoreOutcome o = (*store)->Store("h100-sxm", Measured(Key(next), 1e-4 * next));
      EXPECT_NE(o, StoreOutcome::kLost) << f.name;
      spooled += o == StoreOutcome::kSpooled;
    }
    EXPECT_EQ(spooled, 40) << f.name;
    EXPECT_EQ((*store)->Backlog(), 40) << f.name;
    // This replica keeps finding what it measured.
    EXPECT_TRUE((*store)->Lookup("h100-sxm", Key(first), kMethod, nullptr)) << f.name;
    f.end();
    EXPECT_TRUE(WaitFor([&] { return (*store)->Backlog() == 0; })) << f.name;
    EXPECT_EQ(Rows(pg, "faults"), before + 40) << f.name;
  }
}

// A spool left by a replica that stopped during an outage is drained by the next one.
TEST(StoreFaultTest, ASpoolLeftByARestartedReplicaIsDrained) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("restart");
  {
    auto store = OpenStore(uri, "a:1", Fast(dir.File("spool.db")));
    ASSERT_TRUE(store.ok()) << store.status();
    pg.Stop("immediate");
    for (int i = 1; i <= 10; ++i) {
      EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
    }
  }
  ASSERT_TRUE(pg.Start());
  auto again = OpenStore(uri, "a:2", Fast(dir.File("spool.db")));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(WaitFor([&] { return (*again)->Backlog() == 0; }));
  EXPECT_EQ(Rows(pg, "restart"), 10);
}

// Two replicas of one host share a spool file; one is cut off from the database (a proxy that
// holds its connections) and spools. The other drains what it left, and the first sees its
// backlog go to 0. Then the database stops, the first spools again and is gone for good: the
// live replica's backlog counts those rows (it never wrote them) and it drains them when the
// database is back (issue 52: 214 results stayed in such a spool with a backlog of 0).
TEST(StoreFaultTest, ASharedSpoolIsDrainedByTheLiveReplicaAndCountedInItsBacklog) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("orphan");
  TcpProxy proxy(pg.port());
  const std::string via_proxy =
      absl::StrCat("postgresql://wavecrest@127.0.0.1:", proxy.port(), "/orphan");
  auto a = OpenStore(via_proxy, "replica-a:1", Fast(dir.File("spool-host.db")));
  auto b = OpenStore(uri, "replica-b:1", Fast(dir.File("spool-host.db")));
  ASSERT_TRUE(a.ok() && b.ok());
  proxy.Hold();
  for (int i = 1; i <= 20; ++i) {
    ASSERT_EQ((*a)->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
  }
  EXPECT_TRUE(WaitFor([&] { return Rows(pg, "orphan") == 20; }));
  EXPECT_TRUE(WaitFor([&] { return (*b)->Backlog() == 0 && (*a)->Backlog() == 0; }));
  pg.Stop("fast");
  for (int i = 21; i <= 30; ++i) {
    ASSERT_EQ((*a)->Store("h100-sxm", Measured(Key(i), 1e-4)), StoreOutcome::kSpooled);
  }
  EXPECT_TRUE(WaitFor([&] { return (*b)->Backlog() == 10; })) << (*b)->Backlog();
  a->reset();
  ASSERT_TRUE(pg.Start());
  EXPECT_TRUE(WaitFor([&] { return (*b)->Backlog() == 0; })) << (*b)->Backlog();
  EXPECT_EQ(Rows(pg, "orphan"), 30);
  proxy.Heal();
}

// A claim is renewed while its replica holds it; when that replica loses its database (its
// connections silently cut), the claim ends within its lease and another replica takes it.
TEST(StoreFaultTest, AClaimEndsWithinItsLeaseWhenItsReplicaLosesTheStore) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("claims");
  TcpProxy proxy(pg.port());
  const std::string via_proxy =
      absl::StrCat("postgresql://wavecrest@127.0.0.1:", proxy.port(), "/claims");
  auto a = OpenStore(via_proxy, "replica-a:1", Fast());
  auto b = OpenStore(uri, "replica-b:1", Fast());
  ASSERT_TRUE(a.ok() && b.ok());
  const absl::Duration lease = absl::Milliseconds(1500);
  ASSERT_TRUE((*a)->Claim("gemm-1", lease));
  absl::SleepFor(lease * 2);  // renewed meanwhile
  EXPECT_FALSE((*b)->Claim("gemm-1", lease));
  proxy.Hold();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor([&] { return (*b)->Claim("gemm-1", lease); }, absl::Seconds(10)));
  const double took = SecondsSince(t0);
  std::printf("a claim whose replica lost the store was taken over after %.1f s (lease %.1f s)\n",
              took, absl::ToDoubleSeconds(lease));
  EXPECT_LT(took, 10);
  proxy.Heal();
}

// A release that fails while the database is briefly stopped is retried when it is back: the
// claim does not outlive the outage by its lease (30 s here).
TEST(StoreFaultTest, AReleaseThatFailedIsRetriedWhenTheStoreIsBack) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("release");
  auto a = OpenStore(uri, "replica-a:1", Fast());
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->Claim("gemm-1", absl::Seconds(30)));
  pg.Stop("fast");
  (*a)->Release("gemm-1");  // fails: the database is gone
  absl::SleepFor(absl::Milliseconds(1500));
  ASSERT_TRUE(pg.Start());
  auto b = OpenStore(uri, "replica-b:1", Fast());
  ASSERT_TRUE(b.ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor([&] { return (*b)->Claim("gemm-1", absl::Seconds(30)); },
                      absl::Seconds(10)));
  EXPECT_LT(SecondsSince(t0), 10);
  EXPECT_EQ(pg.Psql("release", "SELECT owner FROM claims"), "replica-b:1\n");
  // Shutting down ends every claim a replica holds.
  b->reset();
  EXPECT_EQ(pg.Psql("release", "SELECT COUNT(*) FROM claims"), "0\n");
}

// A newer server migrating the database takes a running replica's store down (it spools rather
// than write rows an old server may get wrong) instead of going on unaware.
TEST(StoreFaultTest, ANewerSchemaTakesARunningReplicasStoreDown) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  TempDir dir;
  const std::string uri = pg.NewDatabase("schema");
  auto store = OpenStore(uri, "old:1", Fast(dir.File("spool.db")));
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->Available());
  pg.Psql("schema", "INSERT INTO wavecrest_schema (version) VALUES (99)");
  EXPECT_TRUE(WaitFor([&] { return !(*store)->Available(); }, absl::Seconds(5)));
  EXPECT_EQ((*store)->Store("h100-sxm", Measured(Key(1), 1e-4)), StoreOutcome::kSpooled);
  EXPECT_EQ(Rows(pg, "schema"), 0);
}

// A replica whose database is frozen answers Analyze, predictions, ListDevices and health within
// 3 s, says NOT_SERVING for measuring (what it measured would not be shared), and serves again
// when the database is back.
TEST(StoreFaultTest, AFrozenDatabaseNeverHoldsUpAnalyzeHealthOrPredictions) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("replica");
  SlowWorker worker(0);
  ASSERT_GT(worker.port(), 0);
  ServerUnderTest server({"--store=" + uri, "--worker_address=" + worker.address(),
                          "--store_timeout_ms=1000"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  ASSERT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING")) << server.Log();
  AdvisorClient client(server.address(), absl::Seconds(10));
  v1::AnalyzeRequest analyze;
  analyze.set_gpu("h100-sxm");
  analyze.mutable_model()->set_hidden_size(2560);
  analyze.mutable_model()->set_num_attention_heads(32);
  analyze.mutable_model()->set_num_layers(32);
  analyze.mutable_model()->set_vocab_size(50304);
  v1::TimeGemmsRequest predicted = Gemms(3);
  predicted.set_mode(v1::MODE_PREDICTED);
  pg.Freeze();
  double worst = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(client.Analyze(analyze).ok());
    worst = std::max(worst, SecondsSince(t0));
    t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(client.Health("").ok());
    EXPECT_TRUE(client.ListDevices().ok());
    EXPECT_TRUE(client.TimeGemms(predicted, [](const v1::TimeGemmsResponse&) {}).ok());
    worst = std::max(worst, SecondsSince(t0));
  }
  std::printf("database frozen: slowest Analyze or health/devices/predicted round %.2f s\n",
              worst);
  EXPECT_LT(worst, 3.0);
  EXPECT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "NOT_SERVING", absl::Seconds(5)));
  EXPECT_EQ(MetricValue(Metrics(server.metrics_port()), "wavecrest_store_up", {}), 0);
  pg.Thaw();
  EXPECT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING", absl::Seconds(10)));
  EXPECT_EQ(MetricValue(Metrics(server.metrics_port()), "wavecrest_store_up", {}), 1);
}

// MODE_AUTO never waits on another replica's claim: what it is measuring is predicted here, with
// a note. MODE_MEASURED waits, but never past the caller's deadline.
TEST(StoreFaultTest, AutoNeverWaitsOnAnotherReplicasClaimAndDeadlinesWin) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("waits");
  SlowWorker worker(0);
  ASSERT_GT(worker.port(), 0);
  ServerUnderTest server({"--store=" + uri, "--worker_address=" + worker.address()});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  ASSERT_TRUE(server.WaitHealth("wavecrest.v1.Advisor/measure", "SERVING")) << server.Log();
  // Another replica holds the claim on the one GEMM asked for, for a minute.
  auto other = OpenStore(uri, "other:1", Fast());
  ASSERT_TRUE(other.ok());
  v1::TimeGemmsRequest req = Gemms(1);
  const std::string flight = "h100-sxm|00|bf16 TN 512x4096x4096 b1";
  ASSERT_TRUE((*other)->Claim(flight, absl::Seconds(60)));
  req.set_mode(v1::MODE_AUTO);
  AdvisorClient client(server.address(), absl::Seconds(30));
  std::vector<std::string> notes;
  v1::Source source = v1::SOURCE_UNSPECIFIED;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(client.TimeGemms(req, [&](const v1::TimeGemmsResponse& m) {
                if (m.has_timing()) source = m.timing().provenance().source();
                if (absl::StartsWith(m.progress().message(), "note: ")) {
                  notes.push_back(m.progress().message());
                }
              }).ok());
  const double auto_s = SecondsSince(t0);
  EXPECT_EQ(source, v1::SOURCE_PREDICTED);
  EXPECT_THAT(absl::StrJoin(notes, "\n"), HasSubstr("being measured by another replica"));
  req.set_mode(v1::MODE_MEASURED);
  AdvisorClient hurried(server.address(), absl::Seconds(2));
  t0 = std::chrono::steady_clock::now();
  const absl::Status measured = hurried.TimeGemms(req, [](const v1::TimeGemmsResponse&) {});
  const double measured_s = SecondsSince(t0);
  std::printf("another replica's claim: MODE_AUTO answered in %.2f s; MODE_MEASURED with a 2 s "
              "deadline ended after %.2f s (%s)\n",
              auto_s, measured_s, std::string(absl::StatusCodeToString(measured.code())).c_str());
  EXPECT_LT(auto_s, 2.0);
  EXPECT_EQ(measured.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(measured_s, 3.0);
}

// Two replicas under measured load through an 8 s database stop: every timing delivered as
// freshly timed is in the database afterwards, or its answer said it was not stored.
TEST(StoreFaultTest, TwoReplicasThroughAnEightSecondStopLoseNothingTheyAcknowledged) {
  TempPostgres pg;
  SKIP_WITHOUT_POSTGRES(pg);
  const std::string uri = pg.NewDatabase("load");
  SlowWorker worker(20);
  ASSERT_GT(worker.port(), 0);
  TempDir dir;
  std::vector<std::unique_ptr<ServerUnderTest>> replicas;
  for (int i = 0; i < 2; ++i) {
    replicas.push_back(std::make_unique<ServerUnderTest>(std::vector<std::string>{
        "--store=" + uri, "--worker_address=" + worker.address(), "--threads=4",
        "--store_spool=" + dir.File(absl::StrCat("spool-", i, ".db"))}));
  }
  for (auto& r : replicas) {
    ASSERT_TRUE(r->WaitReady()) << r->Log();
    ASSERT_TRUE(r->WaitHealth("wavecrest.v1.Advisor/measure", "SERVING")) << r->Log();
  }
  std::mutex mu;
  std::set<std::string> delivered;  // "m n k" of every freshly timed result acknowledged
  int said_not_stored = 0, calls = 0, failed_calls = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> next{1};
  auto load = [&](const std::string& address) {
    AdvisorClient c(address, absl::Seconds(30));
    while (!stop.load()) {
      v1::TimeGemmsRequest req;
      req.set_gpu("h100-sxm");
      req.set_mode(v1::MODE_MEASURED);
      const int first = next.fetch_add(3);
      for (int i = first; i < first + 3; ++i) {
        v1::GemmShape* g = req.add_gemms();
        g->set_m(64 * i);
        g->set_n(1024);
        g->set_k(1024);
      }
      std::vector<std::string> fresh;
      bool not_stored = false;
      const absl::Status st = c.TimeGemms(req, [&](const v1::TimeGemmsResponse& m) {
        if (m.has_timing() && !m.timing().provenance().from_cache()) {
          fresh.push_back(absl::StrCat(m.timing().shape().m(), " ", m.timing().shape().n(), " ",
                                       m.timing().shape().k()));
        }
        not_stored |= absl::StrContains(m.progress().message(), "could not be stored");
      });
      std::lock_guard<std::mutex> lock(mu);
      ++calls;
      if (!st.ok()) {
        ++failed_calls;
        continue;
      }
      if (not_stored) {
        ++said_not_stored;
        continue;
      }
      delivered.insert(fresh.begin(), fresh.end());
    }
  };
  std::vector<std::thread> clients;
  for (auto& r : replicas) clients.emplace_back(load, r->address());
  absl::SleepFor(absl::Seconds(2));
  pg.Stop("fast");
  absl::SleepFor(absl::Seconds(8));
  ASSERT_TRUE(pg.Start());
  absl::SleepFor(absl::Seconds(2));
  stop = true;
  for (std::thread& t : clients) t.join();
  // Every replica's spool drains into the database.
  for (auto& r : replicas) {
    EXPECT_TRUE(WaitFor([&] {
      return MetricValue(Metrics(r->metrics_port()), "wavecrest_store_backlog", {}) == 0;
    }));
  }
  const std::string rows = pg.Psql("load", "SELECT m || ' ' || n || ' ' || k FROM results");
  std::set<std::string> stored;
  for (absl::string_view line : absl::StrSplit(rows, '\n', absl::SkipEmpty())) {
    stored.emplace(line);
  }
  int missing = 0;
  for (const std::string& d : delivered) missing += stored.count(d) == 0;
  std::printf("8 s database stop under load: %d calls (%d failed, %d said results were not "
              "stored), %zu results acknowledged, %d of them missing from the database\n",
              calls, failed_calls, said_not_stored, delivered.size(), missing);
  double spooled = 0;
  for (auto& r : replicas) {
    spooled += MetricValue(Metrics(r->metrics_port()), "wavecrest_store_writes_total",
                           {"outcome=\"spooled\""});
  }
  EXPECT_GT(spooled, 0) << "the outage never reached the store";
  EXPECT_GT(delivered.size(), 20u);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(said_not_stored, 0);  // the spool kept them all
}

}  // namespace
}  // namespace wavecrest
