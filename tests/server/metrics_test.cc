// The server's Prometheus metrics (server/metrics.h): the names and labels that dashboards and
// alerts read, the series that exist from the start (so rate() has them), and what each call
// adds.
#include "server/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The registry as /metrics shows it.
std::string Exposition(const Metrics& m) {
  return prometheus::TextSerializer().Serialize(m.registry()->Collect());
}

TEST(MetricsTest, SeriesThatAlertsReadExistFromTheStart) {
  const Metrics m;
  const std::string text = Exposition(m);
  EXPECT_THAT(text, HasSubstr("wavecrest_store_up 1"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_writes_total{outcome=\"stored\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_writes_total{outcome=\"spooled\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_writes_total{outcome=\"lost\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_cache_lookups_total{result=\"hit\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_cache_lookups_total{result=\"miss\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_build_info{"));
  EXPECT_THAT(text, HasSubstr("wavecrest_queue_capacity 0"));
}

TEST(MetricsTest, RequestsAreCountedByMethodAndCodeAndTimed) {
  Metrics m;
  m.RequestDone("Analyze", "OK", 0.002);
  m.RequestDone("Analyze", "OK", 0.003);
  m.RequestDone("Analyze", "INVALID_ARGUMENT", 0.001);
  m.InFlight("Recommend").Increment();
  const std::string text = Exposition(m);
  EXPECT_THAT(text, HasSubstr("wavecrest_requests_total{code=\"OK\",method=\"Analyze\"} 2"));
  EXPECT_THAT(
      text, HasSubstr("wavecrest_requests_total{code=\"INVALID_ARGUMENT\",method=\"Analyze\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavecrest_request_duration_seconds_count{method=\"Analyze\"} 3"));
  EXPECT_THAT(text, HasSubstr("wavecrest_requests_in_flight{method=\"Recommend\"} 1"));
}

TEST(MetricsTest, WorkersStartDownWithAZeroRestartCounterPerReason) {
  Metrics m;
  m.AddWorker("gpu0", {"exit", "hang"});
  std::string text = Exposition(m);
  EXPECT_THAT(text, HasSubstr("wavecrest_worker_up{worker=\"gpu0\"} 0"));
  EXPECT_THAT(text,
              HasSubstr("wavecrest_worker_restarts_total{reason=\"exit\",worker=\"gpu0\"} 0"));
  EXPECT_THAT(text,
              HasSubstr("wavecrest_worker_restarts_total{reason=\"hang\",worker=\"gpu0\"} 0"));
  m.SetWorkerUp("gpu0", true);
  m.WorkerRestart("gpu0", "hang");
  text = Exposition(m);
  EXPECT_THAT(text, HasSubstr("wavecrest_worker_up{worker=\"gpu0\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("wavecrest_worker_restarts_total{reason=\"hang\",worker=\"gpu0\"} 1"));
}

TEST(MetricsTest, GaugesHoldTheLastValueSet) {
  Metrics m;
  m.SetQueue(3, 64);
  m.SetStoreUp(false);
  m.SetStoreBacklog(12);
  m.SetQuarantined(2);
  m.SetCacheEntries(4096);
  const std::string text = Exposition(m);
  EXPECT_THAT(text, HasSubstr("wavecrest_queue_depth 3"));
  EXPECT_THAT(text, HasSubstr("wavecrest_queue_capacity 64"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_up 0"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_backlog 12"));
  EXPECT_THAT(text, HasSubstr("wavecrest_quarantined_gemms 2"));
  EXPECT_THAT(text, HasSubstr("wavecrest_cache_entries 4096"));
}

TEST(MetricsTest, GemmsAreCountedByDtypeAndLowerCaseProvenance) {
  Metrics m;
  m.GemmTimed("bf16", "MEASURED");
  m.GemmTimed("bf16", "measured");
  m.CacheLookup(true);
  m.StoreWrite("spooled");
  const std::string text = Exposition(m);
  EXPECT_THAT(text,
              HasSubstr("wavecrest_gemms_timed_total{dtype=\"bf16\",provenance=\"measured\"} 2"));
  EXPECT_THAT(text, Not(HasSubstr("provenance=\"MEASURED\"")));
  EXPECT_THAT(text, HasSubstr("wavecrest_cache_lookups_total{result=\"hit\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavecrest_store_writes_total{outcome=\"spooled\"} 1"));
}

TEST(MetricsTest, HttpRequestsAreCountedByRouteAndStatus) {
  Metrics m;
  m.HttpRequest("/v1/analyze", 200);
  m.HttpRequest("/v1/analyze", 200);
  m.HttpRequest("other", 404);
  const std::string text = Exposition(m);
  EXPECT_THAT(text,
              HasSubstr("wavecrest_http_requests_total{route=\"/v1/analyze\",status=\"200\"} 2"));
  EXPECT_THAT(text, HasSubstr("wavecrest_http_requests_total{route=\"other\",status=\"404\"} 1"));
}

}  // namespace
}  // namespace wavecrest
