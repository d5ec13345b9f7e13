// Where GEMM and layer timings come from: the measurement store, a GPU worker, or the analytic model;
// every result says which (MEASURED, CACHED, PREDICTED). Shared by TimeGemms, TimeLayers and
// Recommend.
#ifndef WAVECREST_SERVER_TIMING_SERVICE_H_
#define WAVECREST_SERVER_TIMING_SERVICE_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "server/measurement_store.h"
#include "server/metrics.h"
#include "service/clock.h"
#include "service/measurer.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// Called once per GEMM of a Measure call, with its index in the list, as each result arrives.
using MeasureCallback = std::function<void(size_t index, absl::StatusOr<v1::GemmTiming> result)>;
// The same for layers.
using LayerMeasureCallback =
    std::function<void(size_t index, absl::StatusOr<v1::LayerTiming> result)>;

// The GPU workers, the one workers interface (server/worker_pool.h implements it). Kinds are
// catalog names ("h100-sxm").
class GpuWorkers {
 public:
  virtual ~GpuWorkers() = default;
  // A worker of this kind is up now.
  virtual bool CanMeasure(absl::string_view kind) const = 0;
  // A worker of this kind is configured (up or not), or some worker's kind is not known yet: only
  // then can waiting help a MEASURED request.
  virtual bool MightMeasure(absl::string_view kind) const = 0;
  // The fingerprint of the kind's current (or last seen) device, if any worker of it ever ran.
  virtual std::optional<v1::DeviceFingerprint> Fingerprint(absl::string_view kind) const = 0;
  // Maps a worker device name (as ListDevices shows it) to its kind; nullopt when unknown.
  virtual std::optional<std::string> KindOfDevice(absl::string_view device_name) const = 0;
  // Times `keys` on a worker of `kind`. Results arrive through `on_result` (one call per key that
  // finished); returns when all did, or with UNAVAILABLE / DEADLINE_EXCEEDED / CANCELLED when the
  // rest cannot be measured (the keys without a result are then not measured).
  virtual absl::Status Measure(absl::string_view kind, const std::vector<GemmKey>& keys,
                               const MeasureOptions& options, const MeasureCallback& on_result,
                               const std::function<bool()>& cancelled) = 0;
  // Times layers whole on a worker of `kind`, as Measure does GEMMs. A source that cannot says so
  // (UNIMPLEMENTED) and the layers are predicted.
  virtual absl::Status MeasureLayers(absl::string_view /*kind*/,
                                     const std::vector<LayerKey>& /*keys*/,
                                     const MeasureOptions& /*options*/,
                                     const LayerMeasureCallback& /*on_result*/,
                                     const std::function<bool()>& /*cancelled*/) {
    return absl::UnimplementedError("these workers cannot time layers");
  }
  // Ends the quarantine of `kind`'s GEMMs (every kind when empty); returns how many ended.
  virtual int64_t ClearQuarantine(absl::string_view kind) = 0;
  // The workers as ListDevices shows them; `internal`: socket paths, addresses and PIDs (admins
  // only).
  virtual void AddWorkers(v1::ListDevicesResponse* response, bool internal) const = 0;
};


// The server's Measurer (service/measurer.h): the measurement store, the GPU workers for the misses,
// the analytic model for the rest.
class TimingService final : public Measurer {
 public:
  // `workers` and `store` may be null (no GPU workers; no measurement store). `clock`: the time
  // deadlines and budgets are read on (the wall clock unless a test gives its own).
  TimingService(GpuWorkers* workers, MeasurementStore* store, Metrics* metrics,
                Clock* clock = &Clock::Real())
      : workers_(workers), store_(store), metrics_(metrics), clock_(clock) {}

  // Measurer. The GPU may be a catalog name or a worker's device name.
  absl::StatusOr<GpuTarget> ResolveGpu(absl::string_view name,
                                       absl::string_view field) const override;
  bool CanMeasure(absl::string_view kind) const override;
  // A worker of `kind` is configured (see GpuWorkers::MightMeasure).
  bool MightMeasure(absl::string_view kind) const override;
  absl::Status NoWorkerError(absl::string_view kind) const override;

  // Produces one result per task GEMM through `emit(index, timing)` (from the calling thread or a
  // worker-reader thread, one call at a time); `progress(done, total, message)` after each.
  // MODE_MEASURED with no worker of the kind: UNAVAILABLE (retryable). Stops early, with
  // CANCELLED or DEADLINE_EXCEEDED, when `cancelled()` turns true or the deadline passes.
  absl::StatusOr<MeasureCounts> TimeGemms(const TimingTask& task,
                                          const std::function<void(size_t, v1::GemmTiming)>& emit,
                                          const TaskProgress& progress,
                                          const std::function<bool()>& cancelled) override;

  // The same for layers timed whole (core/layers.h): store, worker, then the analytic model.
  absl::StatusOr<MeasureCounts> TimeLayers(const LayerTask& task,
                                           const std::function<void(size_t, v1::LayerTiming)>& emit,
                                           const TaskProgress& progress,
                                           const std::function<bool()>& cancelled) override;

  // The analytic model's answer for one GEMM.
  static v1::GemmTiming Predicted(const GpuSpec& gpu, const GemmKey& key);

 private:
  struct GemmUnit;
  struct LayerUnit;
  template <typename Unit, typename Task>
  class UnitRun;
  template <typename Unit, typename Task>
  absl::StatusOr<MeasureCounts> RunUnits(
      const Task& task, const std::function<void(size_t, typename Unit::Timing)>& emit,
      const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
      const std::function<bool()>& cancelled);

  // One GEMM (or layer) being measured for some request; identical requests wait for it.
  template <typename Timing>
  struct Flight {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::optional<Timing> result;
  };
  template <typename Timing>
  using FlightMap = absl::flat_hash_map<std::string, std::shared_ptr<Flight<Timing>>>;
  static std::string FlightKey(const TimingTaskBase& task, const std::string& name);
  // The flights of one unit (flights_mu_ held).
  template <typename Timing>
  FlightMap<Timing>& Flights();
  // Ends a flight (with its result, or none when it could not be measured): waiters wake, and the
  // next request for the GEMM goes to the store.
  template <typename Timing>
  void Land(const std::string& key, Flight<Timing>& flight, const Timing* result);

  std::mutex flights_mu_;
  FlightMap<v1::GemmTiming> flights_;
  FlightMap<v1::LayerTiming> layer_flights_;
  GpuWorkers* workers_;
  MeasurementStore* store_;
  Metrics* metrics_;
  Clock* clock_;
};

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_TIMING_SERVICE_H_
