// What the server measures with: the GPU worker pool (local processes it supervises, or remote
// workers) and the measurement store, built from ServerOptions; and the "can measure" health status.
#ifndef WAVECREST_SERVER_WORKER_SETUP_H_
#define WAVECREST_SERVER_WORKER_SETUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/advisor_service.h"
#include "server/metrics.h"
#include "server/measurement_store.h"
#include "server/server.h"
#include "server/timing_service.h"
#include "service/clock.h"

namespace wavecrest {

class WorkerSetup {
 public:
  virtual ~WorkerSetup() = default;
  virtual GpuWorkers* workers() = 0;  // null when there are no workers
  virtual MeasurementStore* store() = 0;    // null when there is no store
  // Keeps the health status `name` SERVING while some worker is up, NOT_SERVING otherwise.
  virtual void SetHealth(grpc::HealthCheckServiceInterface* health, const char* name) = 0;
  virtual void StopHealthUpdates() = 0;
  virtual void Stop() = 0;  // stops local workers
};

// `clock`: the one the worker pool's backoff, quarantine and heartbeats read.
absl::StatusOr<std::unique_ptr<WorkerSetup>> StartWorkers(const ServerOptions& options,
                                                          Metrics* metrics,
                                                          Clock* clock = &Clock::Real());

// This process as a store knows it (in claims and published calibrations): "host:pid".
std::string StoreOwner();

// Removes this user's wavecrest-workers-* socket directories in `dir` (the temporary directory
// when empty) whose server is gone: its pid file names a process that is gone, or it has no pid
// file and `clock` says it is more than an hour old.
void RemoveStaleSocketDirs(Clock& clock = Clock::Real(), const std::string& dir = "");

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_WORKER_SETUP_H_
