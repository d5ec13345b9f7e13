#include "server/metrics.h"

#include "absl/strings/ascii.h"

namespace wavecrest {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
  return *b;
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("wavecrest_requests_total")
                    .Help("RPCs finished, by method and gRPC status code")
                    .Register(*registry_)),
      latency_(prometheus::BuildHistogram()
                   .Name("wavecrest_request_duration_seconds")
                   .Help("RPC latency from arrival to the final status, by method")
                   .Register(*registry_)),
      in_flight_(prometheus::BuildGauge()
                     .Name("wavecrest_requests_in_flight")
                     .Help("RPCs being served now, by method")
                     .Register(*registry_)),
      queue_depth_(prometheus::BuildGauge()
                       .Name("wavecrest_queue_depth")
                       .Help("Jobs waiting in the job queue")
                       .Register(*registry_)
                       .Add({})),
      queue_capacity_(prometheus::BuildGauge()
                          .Name("wavecrest_queue_capacity")
                          .Help("Jobs the job queue holds before refusing work")
                          .Register(*registry_)
                          .Add({})),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("wavecrest_queue_wait_seconds")
                      .Help("Time jobs waited in the queue before running")
                      .Register(*registry_)
                      .Add({}, LatencyBuckets())),
      cache_lookups_(prometheus::BuildCounter()
                         .Name("wavecrest_cache_lookups_total")
                         .Help("Result cache lookups, by result (hit or miss)")
                         .Register(*registry_)),
      gemms_timed_(prometheus::BuildCounter()
                       .Name("wavecrest_gemms_timed_total")
                       .Help("GEMM results produced, by dtype and provenance")
                       .Register(*registry_)),
      worker_up_(prometheus::BuildGauge()
                     .Name("wavecrest_worker_up")
                     .Help("1 when the GPU worker is up and serving, else 0")
                     .Register(*registry_)),
      worker_restarts_(prometheus::BuildCounter()
                           .Name("wavecrest_worker_restarts_total")
                           .Help("GPU worker restarts, by worker and reason")
                           .Register(*registry_)),
      cache_entries_(prometheus::BuildGauge()
                         .Name("wavecrest_cache_entries")
                         .Help("Measurements held in the result cache")
                         .Register(*registry_)
                         .Add({})),
      store_up_(prometheus::BuildGauge()
                    .Name("wavecrest_store_up")
                    .Help("0 while the measurement store is down; 1 otherwise (also with no store)")
                    .Register(*registry_)
                    .Add({})),
      store_backlog_(prometheus::BuildGauge()
                         .Name("wavecrest_store_backlog")
                         .Help("Results kept in this replica's spool, not yet in the shared store")
                         .Register(*registry_)
                         .Add({})),
      store_writes_(prometheus::BuildCounter()
                        .Name("wavecrest_store_writes_total")
                        .Help("Results handed to the store, by outcome (stored, spooled, lost)")
                        .Register(*registry_)),
      worker_wait_(prometheus::BuildHistogram()
                       .Name("wavecrest_worker_wait_seconds")
                       .Help("Time a measurement waited for a free worker of its kind")
                       .Register(*registry_)
                       .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1, 0.5, 1, 5,
                                                                        10, 30, 60, 300})),
      quarantined_(prometheus::BuildGauge()
                       .Name("wavecrest_quarantined_gemms")
                       .Help("GEMMs quarantined after crashing a worker twice")
                       .Register(*registry_)
                       .Add({})),
      http_requests_(prometheus::BuildCounter()
                         .Name("wavecrest_http_requests_total")
                         .Help("HTTP gateway requests, by route and HTTP status")
                         .Register(*registry_)) {
  store_up_.Set(1);
  for (const char* outcome : {"stored", "spooled", "lost"}) {
    store_writes_.Add({{"outcome", outcome}});  // each 0 from the start, for rates and alerts
  }
  prometheus::BuildGauge()
      .Name("wavecrest_build_info")
      .Help("Build information; the value is always 1")
      .Register(*registry_)
      .Add({{"version", WAVECREST_VERSION}, {"cuda", WAVECREST_CUDA_BUILD ? "yes" : "no"}})
      .Set(1);
  cache_lookups_.Add({{"result", "hit"}});
  cache_lookups_.Add({{"result", "miss"}});
}

void Metrics::RequestDone(absl::string_view method, absl::string_view code, double seconds) {
  requests_.Add({{"method", std::string(method)}, {"code", std::string(code)}}).Increment();
  latency_.Add({{"method", std::string(method)}}, LatencyBuckets()).Observe(seconds);
}

prometheus::Gauge& Metrics::InFlight(absl::string_view method) {
  return in_flight_.Add({{"method", std::string(method)}});
}

void Metrics::SetQueue(int depth, int capacity) {
  queue_depth_.Set(depth);
  queue_capacity_.Set(capacity);
}

void Metrics::QueueWait(double seconds) { queue_wait_.Observe(seconds); }

void Metrics::CacheLookup(bool hit) {
  cache_lookups_.Add({{"result", hit ? "hit" : "miss"}}).Increment();
}

void Metrics::GemmTimed(absl::string_view dtype, absl::string_view provenance) {
  gemms_timed_
      .Add({{"dtype", std::string(dtype)}, {"provenance", absl::AsciiStrToLower(provenance)}})
      .Increment();
}

void Metrics::AddWorker(absl::string_view worker, const std::vector<std::string>& reasons) {
  SetWorkerUp(worker, false);
  for (const std::string& r : reasons) {
    worker_restarts_.Add({{"worker", std::string(worker)}, {"reason", r}});
  }
}

void Metrics::SetWorkerUp(absl::string_view worker, bool up) {
  worker_up_.Add({{"worker", std::string(worker)}}).Set(up ? 1 : 0);
}

void Metrics::WorkerRestart(absl::string_view worker, absl::string_view reason) {
  worker_restarts_.Add({{"worker", std::string(worker)}, {"reason", std::string(reason)}})
      .Increment();
}

void Metrics::WorkerWait(double seconds) { worker_wait_.Observe(seconds); }

void Metrics::SetQuarantined(int64_t gemms) { quarantined_.Set(static_cast<double>(gemms)); }

void Metrics::HttpRequest(absl::string_view route, int status) {
  http_requests_.Add({{"route", std::string(route)}, {"status", std::to_string(status)}})
      .Increment();
}

void Metrics::SetCacheEntries(int64_t entries) { cache_entries_.Set(static_cast<double>(entries)); }

void Metrics::SetStoreUp(bool up) { store_up_.Set(up ? 1 : 0); }

void Metrics::SetStoreBacklog(int64_t rows) { store_backlog_.Set(static_cast<double>(rows)); }

void Metrics::StoreWrite(absl::string_view outcome) {
  store_writes_.Add({{"outcome", std::string(outcome)}}).Increment();
}

}  // namespace wavecrest
