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
void MarkFromCache(v1::GemmTiming* t) {
  v1::Provenance* p = t->mutable_provenance();
  p->set_from_cache(true);
  if (p->source() == v1::SOURCE_MEASURED) p->set_source(v1::SOURCE_CACHED);
}
}  // namespace

void TimingService::Land(const std::string& key, Flight& flight, const v1::GemmTiming* result) {
  {
    std::lock_guard<std::mutex> lock(flight.mu);
    if (flight.done) return;
    flight.done = true;
    if (result) flight.result = *result;
  }
  flight.cv.notify_all();
  std::lock_guard<std::mutex> lock(flights_mu_);
  flights_.erase(key);
}

std::string TimingService::FlightKey(const TimingTask& task, const GemmKey& key) {
  return absl::StrCat(task.kind, "|", task.autotune, task.warm_l2, "|", GemmKeyString(key));
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

absl::StatusOr<TimingSummary> TimingService::Run(
    const TimingTask& task, const std::function<void(size_t, v1::GemmTiming)>& emit,
    const std::function<void(int64_t, int64_t, absl::string_view)>& progress,
    const std::function<bool()>& cancelled) {
  TimingSummary summary;
  const int64_t total = static_cast<int64_t>(task.gemms.size());
  std::vector<bool> done(task.gemms.size(), false);
  int64_t finished = 0;
  std::mutex mu;  // emit, progress and the counters, when results come from a reader thread
  auto deliver = [&](size_t i, v1::GemmTiming t, absl::string_view what) {
    std::lock_guard<std::mutex> lock(mu);
    if (done[i]) return;
    done[i] = true;
    ++finished;
    if (metrics_) {
      metrics_->GemmTimed(DTypeName(task.gemms[i].dtype),
                          v1::Source_Name(t.provenance().source()).substr(7));
    }
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
    const std::string method =
        TimingMethod(fp ? fp->backend() : "cublaslt", task.autotune, task.warm_l2);
    for (size_t i = 0; i < task.gemms.size(); ++i) {
      std::optional<v1::GemmTiming> hit =
          cache_->Lookup(task.kind, task.gemms[i], method, fp ? &*fp : nullptr);
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
  for (size_t i = 0; i < task.gemms.size(); ++i) {
    if (!done[i]) missing.push_back(i);
  }
  std::vector<absl::Status> key_errors(task.gemms.size());
  if (may_measure && !missing.empty()) {
    if (CanMeasure(task.kind)) {
      std::vector<size_t> mine;
      std::vector<std::shared_ptr<Flight>> my_flights;
      std::vector<std::pair<size_t, std::shared_ptr<Flight>>> theirs;
      {
        std::lock_guard<std::mutex> lock(flights_mu_);
        for (size_t i : missing) {
          const std::string fk = FlightKey(task, task.gemms[i]);
          auto it = flights_.find(fk);
          if (it != flights_.end()) {
            theirs.emplace_back(i, it->second);
          } else {
            auto f = std::make_shared<Flight>();
            flights_.emplace(fk, f);
            mine.push_back(i);
            my_flights.push_back(f);
          }
        }
      }
      // A flight that finished between this request's cache lookup and its claim left its result
      // in the cache (stored before the flight ends): look once more before measuring.
      if (cache_ && fp && !mine.empty()) {
        const std::string method = TimingMethod(fp->backend(), task.autotune, task.warm_l2);
        std::vector<size_t> still;
        std::vector<std::shared_ptr<Flight>> still_flights;
        for (size_t j = 0; j < mine.size(); ++j) {
          std::optional<v1::GemmTiming> hit =
              cache_->Lookup(task.kind, task.gemms[mine[j]], method, &*fp);
          if (hit) {
            MarkFromCache(&*hit);
            Land(FlightKey(task, task.gemms[mine[j]]), *my_flights[j], &*hit);
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
      auto finish = [&](size_t j, const v1::GemmTiming* t) {
        Land(FlightKey(task, task.gemms[mine[j]]), *my_flights[j], t);
      };
      absl::Cleanup finish_all = [&] {
        for (size_t j = 0; j < mine.size(); ++j) finish(j, nullptr);
      };
      absl::Status st;
      if (!mine.empty()) {
        std::vector<GemmKey> keys;
        for (size_t i : mine) keys.push_back(task.gemms[i]);
        MeasureOptions options;
        options.autotune = task.autotune;
        options.warm_l2 = task.warm_l2;
        options.deadline = task.deadline;
        st = workers_->Measure(
            task.kind, keys, options,
            [&](size_t j, absl::StatusOr<v1::GemmTiming> r) {
              if (!r.ok()) {
                std::lock_guard<std::mutex> lock(mu);
                key_errors[mine[j]] = r.status();
                summary.notes.push_back(absl::StrCat(GemmKeyString(keys[j]), ": not measured (",
                                                     r.status().message(), ")"));
                return;
              }
              if (cache_) cache_->Store(task.kind, *r);
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
          v1::GemmTiming t = *flight->result;
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
      summary.notes.push_back(
          absl::StrCat("no ", task.kind, " worker is up: uncached GEMMs are PREDICTED"));
    }
  }
  // 3. The analytic model for whatever is left.
  for (size_t i = 0; i < task.gemms.size(); ++i) {
    if (done[i]) continue;
    if (absl::Status stop = stop_status(); !stop.ok()) return stop;
    if (task.mode == v1::MODE_MEASURED) {
      if (!key_errors[i].ok()) {
        return absl::Status(key_errors[i].code(), absl::StrCat(GemmKeyString(task.gemms[i]), ": ",
                                                               key_errors[i].message()));
      }
      return absl::UnavailableError(
          absl::StrCat(GemmKeyString(task.gemms[i]), " could not be measured"));
    }
    ++summary.predicted;
    deliver(i, Predicted(*task.gpu, task.gemms[i]), "predicted");
  }
  return summary;
}

}  // namespace wavecrest
