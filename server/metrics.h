// Prometheus metrics of the server (prometheus-cpp), all prefixed wavecrest_.
#ifndef WAVECREST_SERVER_METRICS_H_
#define WAVECREST_SERVER_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace wavecrest {

class Metrics {
 public:
  Metrics();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // One finished RPC: code is the gRPC status code name ("OK", "INVALID_ARGUMENT", ...).
  void RequestDone(absl::string_view method, absl::string_view code, double seconds);
  prometheus::Gauge& InFlight(absl::string_view method);
  void SetQueue(int depth, int capacity);
  void QueueWait(double seconds);
  void CacheLookup(bool hit);
  void GemmTimed(absl::string_view dtype, absl::string_view provenance);
  // A worker the server knows of: up = 0, and a zero restart counter per reason in `reasons`, so
  // that rate() and increase() have series from the start.
  void AddWorker(absl::string_view worker, const std::vector<std::string>& reasons);
  void SetWorkerUp(absl::string_view worker, bool up);
  void WorkerRestart(absl::string_view worker, absl::string_view reason);
  void SetCacheEntries(int64_t entries);
  // The measurement store: whether it answers (1/0), results waiting in its spool, and what
  // became of each result handed to it (stored, spooled, lost).
  void SetStoreUp(bool up);
  void SetStoreBacklog(int64_t rows);
  void StoreWrite(absl::string_view outcome);
  void WorkerWait(double seconds);
  void SetQuarantined(int64_t gemms);
  // One HTTP gateway request: its route ("/v1/analyze", or "other") and HTTP status.
  void HttpRequest(absl::string_view route, int status);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Gauge>& in_flight_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& queue_capacity_;
  prometheus::Histogram& queue_wait_;
  prometheus::Family<prometheus::Counter>& cache_lookups_;
  prometheus::Family<prometheus::Counter>& gemms_timed_;
  prometheus::Family<prometheus::Gauge>& worker_up_;
  prometheus::Family<prometheus::Counter>& worker_restarts_;
  prometheus::Gauge& cache_entries_;
  prometheus::Gauge& store_up_;
  prometheus::Gauge& store_backlog_;
  prometheus::Family<prometheus::Counter>& store_writes_;
  prometheus::Histogram& worker_wait_;
  prometheus::Gauge& quarantined_;
  prometheus::Family<prometheus::Counter>& http_requests_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_METRICS_H_
