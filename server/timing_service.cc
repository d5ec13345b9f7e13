#include "server/timing_service.h"

#include <mutex>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "service/advisor_logic.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/log.h"

namespace wavecrest {

namespace {
// A cached answer: a GPU measurement becomes CACHED; an emulating worker's stays PREDICTED.
template <typename Timing>
void MarkFromCache(Timing* t) {
  v1::Provenance* p = t->mutable_provenance();
  p->set_from_cache(true);
  if (p->source() == v1::SOURCE_MEASURED) p->set_source(v1::SOURCE_CACHED);
}
}  // namespace

// What TimingService::RunUnits needs to know of a unit of work: single GEMMs or whole layers.
struct TimingService::GemmUnit {
  using Key = GemmKey;
  using Timing = v1::GemmTiming;
  static const std::vector<Key>& Keys(const TimingTask& t) { return t.gemms; }
  static std::string Name(const Key& k) { return GemmKeyString(k); }
  static absl::string_view Noun() { return "GEMMs"; }
  static std::string Method(absl::string_view backend, const TimingTaskBase& t) {
    return TimingMethod(backend, t.autotune, t.warm_l2);
  }
  static std::optional<Timing> Lookup(ResultStore& c, absl::string_view kind, const Key& k,
                                      const std::string& method, const v1::DeviceFingerprint* fp) {
    return c.Lookup(kind, k, method, fp);
  }
  static void Store(ResultStore& c, absl::string_view kind, const Timing& t) { c.Store(kind, t); }
  static absl::Status Measure(MeasurementSource& w, absl::string_view kind,
                              const std::vector<Key>& keys, const MeasureOptions& o,
                              const std::function<void(size_t, absl::StatusOr<Timing>)>& cb,
                              const std::function<bool()>& cancelled) {
    return w.Measure(kind, keys, o, cb, cancelled);
  }
  static Timing Predict(const GpuSpec& gpu, const Key& k) { return Predicted(gpu, k); }
  static void Count(Metrics& m, const Key& k, const Timing& t) {
    m.GemmTimed(DTypeName(k.dtype), v1::Source_Name(t.provenance().source()).substr(7));
  }
};

struct TimingService::LayerUnit {
  using Key = LayerKey;
  using Timing = v1::LayerTiming;
  static const std::vector<Key>& Keys(const LayerTask& t) { return t.layers; }
  static std::string Name(const Key& k) { return LayerKeyString(k); }
  static absl::string_view Noun() { return "layers"; }
  static std::string Method(absl::string_view backend, const TimingTaskBase& t) {
    return LayerTimingMethod(backend, t.warm_l2);
  }
  static std::optional<Timing> Lookup(ResultStore& c, absl::string_view kind, const Key& k,
                                      const std::string& method, const v1::DeviceFingerprint* fp) {
    return c.LookupLayer(kind, k, method, fp);
  }
  static void Store(ResultStore& c, absl::string_view kind, const Timing& t) {
    c.StoreLayer(kind, t);
  }
  static absl::Status Measure(MeasurementSource& w, absl::string_view kind,
                              const std::vector<Key>& keys, const MeasureOptions& o,
                              const std::function<void(size_t, absl::StatusOr<Timing>)>& cb,
                              const std::function<bool()>& cancelled) {
    return w.MeasureLayers(kind, keys, o, cb, cancelled);
  }
  static Timing Predict(const GpuSpec& gpu, const Key& k) { return PredictedLayerTiming(gpu, k); }
  static void Count(Metrics&, const Key&, const Timing&) {}  // GEMMs timed counts GEMMs only
};

template <typename Timing>
void TimingService::Land(const std::string& key, Flight<Timing>& flight, const Timing* result) {
  {
    std::lock_guard<std::mutex> lock(flight.mu);
    if (flight.done) return;
    flight.done = true;
    if (result) flight.result = *result;
  }
  flight.cv.notify_all();
  std::lock_guard<std::mutex> lock(flights_mu_);
  Flights<Timing>().erase(key);
}

std::string TimingService::FlightKey(const TimingTaskBase& task, const std::string& name) {
  return absl::StrCat(task.kind, "|", task.autotune, task.warm_l2, "|", name);
}

template <>
auto TimingService::Flights<v1::GemmTiming>() -> FlightMap<v1::GemmTiming>& {
  return flights_;
}
template <>
auto TimingService::Flights<v1::LayerTiming>() -> FlightMap<v1::LayerTiming>& {
  return layer_flights_;
}

absl::StatusOr<std::pair<std::string, const GpuSpec*>> TimingService::ResolveGpu(
    absl::string_view name, absl::string_view field) const {
  if (name.empty()) {
    return FieldError(field, GpuRequired());
  }
  if (auto gpu = FindGpu(name); gpu.ok()) return std::make_pair((*gpu)->name, *gpu);
  if (workers_) {
    if (auto kind = workers_->KindOfDevice(name)) {
      if (auto gpu = FindGpu(*kind); gpu.ok()) return std::make_pair(*kind, *gpu);
    }
  }
  return FindGpu(name).status();
}

bool TimingService::CanMeasure(absl::string_view kind) const {
  return workers_ != nullptr && workers_->CanMeasure(kind);
}

bool TimingService::MightMeasure(absl::string_view kind) const {
  return workers_ != nullptr && workers_->MightMeasure(kind);
}

absl::Status TimingService::NoWorkerError(absl::string_view kind) const {
  if (workers_ == nullptr || !workers_->MightMeasure(kind)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MODE_MEASURED: this server has no ", kind,
        " worker configured (start it with --workers or --worker_address), so waiting cannot "
        "help; ask for MODE_AUTO or MODE_PREDICTED"));
  }
  return WithRetryDelay(
      absl::UnavailableError(absl::StrCat("no worker of kind ", kind,
                                          " is up to measure on; retry later, or ask for "
                                          "MODE_AUTO or MODE_PREDICTED")),
      absl::Seconds(5), "NO_WORKER");
}

v1::GemmTiming TimingService::Predicted(const GpuSpec& gpu, const GemmKey& key) {
  const GemmPrediction p = PredictGemm(gpu, key);
  v1::GemmTiming t = TimingOf(key);
  t.set_time_s(p.time_s);
  t.set_tflops(p.tflops);
  *t.mutable_provenance() = PredictedProvenance(gpu, key.dtype, p.time_s);
  return t;
}

template <typename Unit, typename Task>
absl::StatusOr<TimingSummary> TimingService::RunUnits(
    const Task& task, const std::function<void(size_t, typename Unit::Timing)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  using Timing = typename Unit::Timing;
  using Key = typename Unit::Key;
  const std::vector<Key>& keys_all = Unit::Keys(task);
  TimingSummary summary;
  const int64_t total = static_cast<int64_t>(keys_all.size());
  std::vector<bool> done(keys_all.size(), false);
  int64_t finished = 0;
  std::mutex mu;  // emit, progress and the counters, when results come from a reader thread
  auto deliver = [&](size_t i, Timing t, absl::string_view what) {
    std::lock_guard<std::mutex> lock(mu);
    if (done[i]) return;
    done[i] = true;
    ++finished;
    if (metrics_) Unit::Count(*metrics_, keys_all[i], t);
    emit(i, std::move(t));
    progress(finished, total, what);
  };
  auto stop_status = [&]() -> absl::Status {
    if (cancelled()) return absl::CancelledError("the call was cancelled");
    if (absl::Now() > task.deadline) return absl::DeadlineExceededError("deadline passed");
    return absl::OkStatus();
  };

  const bool may_measure = task.mode != v1::MODE_PREDICTED;
  std::optional<v1::DeviceFingerprint> fp =
      may_measure && workers_ ? workers_->Fingerprint(task.kind) : std::nullopt;
  if (fp && fp->backend() == "analytic") {
    summary.notes.push_back(
        absl::StrCat("the ", task.kind,
                     " worker emulates the GPU with the analytic model (no GPU): its "
                     "results are PREDICTED"));
  }
  // 1. The cache. Without a fingerprint (no worker of the kind seen yet) only GPU measurements
  // of the kind are looked up.
  if (may_measure && cache_) {
    const std::string method = Unit::Method(fp ? fp->backend() : "cublaslt", task);
    for (size_t i = 0; i < keys_all.size(); ++i) {
      std::optional<Timing> hit =
          Unit::Lookup(*cache_, task.kind, keys_all[i], method, fp ? &*fp : nullptr);
      if (metrics_) metrics_->CacheLookup(hit.has_value());
      if (hit) {
        MarkFromCache(&*hit);
        ++summary.cached;
        deliver(i, std::move(*hit), "cache");
      }
    }
  }
  // 2. A worker, for the misses. A GEMM that an identical request is measuring right now is not
  // measured again: this request waits for that result.
  std::vector<size_t> missing;
  for (size_t i = 0; i < keys_all.size(); ++i) {
    if (!done[i]) missing.push_back(i);
  }
  std::vector<absl::Status> key_errors(keys_all.size());
  if (may_measure && !missing.empty()) {
    if (CanMeasure(task.kind)) {
      std::vector<size_t> mine;
      std::vector<std::shared_ptr<Flight<Timing>>> my_flights;
      std::vector<std::pair<size_t, std::shared_ptr<Flight<Timing>>>> theirs;
      {
        std::lock_guard<std::mutex> lock(flights_mu_);
        for (size_t i : missing) {
          const std::string fk = FlightKey(task, Unit::Name(keys_all[i]));
          auto& flights = Flights<Timing>();
          auto it = flights.find(fk);
          if (it != flights.end()) {
            theirs.emplace_back(i, it->second);
          } else {
            auto f = std::make_shared<Flight<Timing>>();
            flights.emplace(fk, f);
            mine.push_back(i);
            my_flights.push_back(f);
          }
        }
      }
      // A flight that finished between this request's cache lookup and its claim left its result
      // in the cache (stored before the flight ends): look once more before measuring.
      if (cache_ && fp && !mine.empty()) {
        const std::string method = Unit::Method(fp->backend(), task);
        std::vector<size_t> still;
        std::vector<std::shared_ptr<Flight<Timing>>> still_flights;
        for (size_t j = 0; j < mine.size(); ++j) {
          std::optional<Timing> hit =
              Unit::Lookup(*cache_, task.kind, keys_all[mine[j]], method, &*fp);
          if (hit) {
            MarkFromCache(&*hit);
            Land<Timing>(FlightKey(task, Unit::Name(keys_all[mine[j]])), *my_flights[j], &*hit);
            ++summary.cached;
            deliver(mine[j], std::move(*hit), "cache");
          } else {
            still.push_back(mine[j]);
            still_flights.push_back(my_flights[j]);
          }
        }
        mine = std::move(still);
        my_flights = std::move(still_flights);
      }
      // Every flight this request owns is finished, whatever happens below.
      auto finish = [&](size_t j, const Timing* t) {
        Land<Timing>(FlightKey(task, Unit::Name(keys_all[mine[j]])), *my_flights[j], t);
      };
      absl::Cleanup finish_all = [&] {
        for (size_t j = 0; j < mine.size(); ++j) finish(j, nullptr);
      };
      absl::Status st;
      if (!mine.empty()) {
        std::vector<Key> keys;
        for (size_t i : mine) keys.push_back(keys_all[i]);
        MeasureOptions options;
        options.autotune = task.autotune;
        options.warm_l2 = task.warm_l2;
        options.deadline = task.deadline;
        st = Unit::Measure(
            *workers_, task.kind, keys, options,
            [&](size_t j, absl::StatusOr<Timing> r) {
              if (!r.ok()) {
                std::lock_guard<std::mutex> lock(mu);
                key_errors[mine[j]] = r.status();
                summary.notes.push_back(absl::StrCat(Unit::Name(keys[j]), ": not measured (",
                                                     r.status().message(), ")"));
                return;
              }
              if (cache_) Unit::Store(*cache_, task.kind, *r);
              finish(j, &*r);
              {
                std::lock_guard<std::mutex> lock(mu);
                // An emulating worker's answer is a prediction, and is counted as one.
                ++(r->provenance().source() == v1::SOURCE_MEASURED ? summary.measured
                                                                   : summary.predicted);
              }
              deliver(mine[j], std::move(*r), "measured");
            },
            cancelled);
      }
      std::move(finish_all).Invoke();
      // The GEMMs another request was measuring.
      for (auto& [i, flight] : theirs) {
        std::unique_lock<std::mutex> lock(flight->mu);
        while (!flight->done) {
          if (!stop_status().ok()) break;
          flight->cv.wait_for(lock, std::chrono::milliseconds(50));
        }
        if (flight->done && flight->result) {
          Timing t = *flight->result;
          lock.unlock();
          {
            std::lock_guard<std::mutex> l(mu);
            ++(t.provenance().source() == v1::SOURCE_MEASURED ? summary.measured
                                                              : summary.predicted);
            ++summary.shared;
          }
          deliver(i, std::move(t), "measured (shared with an identical request)");
        }
      }

      if (absl::Status stop = stop_status(); !stop.ok()) return stop;
      if (!st.ok()) {
        if (task.mode == v1::MODE_MEASURED) return st;
        summary.notes.push_back(
            absl::StrCat("measurement stopped (", st.message(), "); the rest is PREDICTED"));
      }
    } else if (task.mode == v1::MODE_MEASURED) {
      return NoWorkerError(task.kind);
    } else {
      summary.notes.push_back(absl::StrCat("no ", task.kind, " worker is up: uncached ",
                                           Unit::Noun(), " are PREDICTED"));
    }
  }
  // 3. The analytic model for whatever is left.
  for (size_t i = 0; i < keys_all.size(); ++i) {
    if (done[i]) continue;
    if (absl::Status stop = stop_status(); !stop.ok()) return stop;
    if (task.mode == v1::MODE_MEASURED) {
      if (!key_errors[i].ok()) {
        return absl::Status(key_errors[i].code(),
                            absl::StrCat(Unit::Name(keys_all[i]), ": ", key_errors[i].message()));
      }
      return absl::UnavailableError(
          absl::StrCat(Unit::Name(keys_all[i]), " could not be measured"));
    }
    ++summary.predicted;
    deliver(i, Unit::Predict(*task.gpu, keys_all[i]), "predicted");
  }
  return summary;
}

absl::StatusOr<TimingSummary> TimingService::Run(
    const TimingTask& task, const std::function<void(size_t, v1::GemmTiming)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  return RunUnits<GemmUnit>(task, emit, progress, cancelled);
}

absl::StatusOr<TimingSummary> TimingService::RunLayers(
    const LayerTask& task, const std::function<void(size_t, v1::LayerTiming)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  return RunUnits<LayerUnit>(task, emit, progress, cancelled);
}

}  // namespace wavecrest
