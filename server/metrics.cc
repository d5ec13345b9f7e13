#include "server/metrics.h"

#include "absl/strings/ascii.h"

namespace wavecrest {
namespace {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
  return *b;
}

// One metric family registered under `name` with its help text.
prometheus::Family<prometheus::Counter>& Counters(prometheus::Registry& r, const char* name,
                                                  const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Gauge>& Gauges(prometheus::Registry& r, const char* name,
                                              const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& Histograms(prometheus::Registry& r, const char* name,
                                                      const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(Counters(*registry_, "wavecrest_requests_total",
                         "RPCs finished, by method and gRPC status code")),
      latency_(Histograms(*registry_, "wavecrest_request_duration_seconds",
                          "RPC latency from arrival to the final status, by method")),
      in_flight_(
          Gauges(*registry_, "wavecrest_requests_in_flight", "RPCs being served now, by method")),
      queue_depth_(
          Gauges(*registry_, "wavecrest_queue_depth", "Jobs waiting in the job queue").Add({})),
      queue_capacity_(Gauges(*registry_, "wavecrest_queue_capacity",
                             "Jobs the job queue holds before refusing work")
                          .Add({})),
      queue_wait_(Histograms(*registry_, "wavecrest_queue_wait_seconds",
                             "Time jobs waited in the queue before running")
                      .Add({}, LatencyBuckets())),
      cache_lookups_(Counters(*registry_, "wavecrest_cache_lookups_total",
                              "Measurement store lookups, by result (hit or miss)")),
      gemms_timed_(Counters(*registry_, "wavecrest_gemms_timed_total",
                            "GEMM results produced, by dtype and provenance")),
      worker_up_(Gauges(*registry_, "wavecrest_worker_up",
                        "1 when the GPU worker is up and serving, else 0")),
      worker_restarts_(Counters(*registry_, "wavecrest_worker_restarts_total",
                                "GPU worker restarts, by worker and reason")),
      cache_entries_(Gauges(*registry_, "wavecrest_cache_entries",
                            "Measurements held in the measurement store")
                         .Add({})),
      store_up_(Gauges(*registry_, "wavecrest_store_up",
                       "0 while the measurement store is down; 1 otherwise (also with no store)")
                    .Add({})),
      store_backlog_(Gauges(*registry_, "wavecrest_store_backlog",
                            "Results kept in this replica's spool, not yet in the shared store")
                         .Add({})),
      store_writes_(Counters(*registry_, "wavecrest_store_writes_total",
                             "Results handed to the store, by outcome (stored, spooled, lost)")),
      worker_wait_(Histograms(*registry_, "wavecrest_worker_wait_seconds",
                              "Time a measurement waited for a free worker of its kind")
                       .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.01, 0.1, 0.5, 1, 5,
                                                                        10, 30, 60, 300})),
      quarantined_(Gauges(*registry_, "wavecrest_quarantined_gemms",
                          "GEMMs quarantined after crashing a worker twice")
                       .Add({})),
      http_requests_(Counters(*registry_, "wavecrest_http_requests_total",
                              "HTTP gateway requests, by route and HTTP status")) {
  store_up_.Set(1);
  for (const char* outcome : {"stored", "spooled", "lost"}) {
    store_writes_.Add({{"outcome", outcome}});  // each 0 from the start, for rates and alerts
  }
  Gauges(*registry_, "wavecrest_build_info", "Build information; the value is always 1")
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
