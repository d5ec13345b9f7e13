#include "server/timing_service.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "server/advisor_logic.h"
#include "server/convert.h"
#include "server/errors.h"

namespace wavecrest {

std::string MeasureMethod(bool autotune) {
  return autotune ? "cublaslt-timing-v1 autotune" : "cublaslt-timing-v1 heuristic";
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

v1::GemmTiming TimingService::Predicted(const GpuSpec& gpu, const GemmKey& key) {
  const GemmPrediction p = PredictGemm(gpu, key);
  v1::GemmTiming t;
  t.mutable_shape()->set_m(key.shape.m);
  t.mutable_shape()->set_n(key.shape.n);
  t.mutable_shape()->set_k(key.shape.k);
  t.mutable_shape()->set_batch(key.shape.batch);
  t.set_layout(ToProto(key.layout));
  t.set_dtype(ToProto(key.dtype));
  t.set_time_s(p.time_s);
  t.set_tflops(p.tflops);
  *t.mutable_provenance() = PredictedProvenance(gpu);
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
  // 1. The cache.
  if (may_measure && cache_) {
    std::optional<v1::DeviceFingerprint> fp =
        workers_ ? workers_->Fingerprint(task.kind) : std::nullopt;
    const std::string method = MeasureMethod(task.autotune);
    for (size_t i = 0; i < task.gemms.size(); ++i) {
      std::optional<v1::GemmTiming> hit =
          cache_->Lookup(task.kind, task.gemms[i], method, fp ? &*fp : nullptr);
      if (metrics_) metrics_->CacheLookup(hit.has_value());
      if (hit) {
        hit->mutable_provenance()->set_source(v1::SOURCE_CACHED);
        ++summary.cached;
        deliver(i, std::move(*hit), "cache");
      }
    }
  }
  // 2. A worker, for the misses.
  std::vector<size_t> missing;
  for (size_t i = 0; i < task.gemms.size(); ++i) {
    if (!done[i]) missing.push_back(i);
  }
  if (may_measure && !missing.empty()) {
    if (CanMeasure(task.kind)) {
      std::vector<GemmKey> keys;
      for (size_t i : missing) keys.push_back(task.gemms[i]);
      MeasureOptions options;
      options.autotune = task.autotune;
      options.deadline = task.deadline;
      absl::Status st = workers_->Measure(
          task.kind, keys, options,
          [&](size_t j, absl::StatusOr<v1::GemmTiming> r) {
            if (!r.ok()) {
              std::lock_guard<std::mutex> lock(mu);
              summary.notes.push_back(absl::StrCat(GemmKeyString(keys[j]), ": not measured (",
                                                   r.status().message(), ")"));
              return;
            }
            if (cache_) cache_->Store(task.kind, *r);
            {
              std::lock_guard<std::mutex> lock(mu);
              ++summary.measured;
            }
            deliver(missing[j], std::move(*r), "measured");
          },
          cancelled);

      if (absl::Status stop = stop_status(); !stop.ok()) return stop;
      if (!st.ok()) {
        if (task.mode == v1::MODE_MEASURED) return st;
        summary.notes.push_back(
            absl::StrCat("measurement stopped (", st.message(), "); the rest is PREDICTED"));
      }
    } else if (task.mode == v1::MODE_MEASURED) {
      return WithRetryDelay(
          absl::UnavailableError(absl::StrCat("no worker of kind ", task.kind,
                                              " is up to measure on; retry later, or ask for "
                                              "MODE_AUTO or MODE_PREDICTED")),
          absl::Seconds(5), "NO_WORKER");
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
      return absl::UnavailableError(
          absl::StrCat(GemmKeyString(task.gemms[i]), " could not be measured"));
    }
    ++summary.predicted;
    deliver(i, Predicted(*task.gpu, task.gemms[i]), "predicted");
  }
  return summary;
}

}  // namespace wavecrest
