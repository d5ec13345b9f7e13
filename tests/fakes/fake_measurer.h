// A Measurer for in-process tests of the logic layer: it "measures" every GEMM and layer at the
// analytic model's time times a factor, labelled MEASURED, one unit at a time, and keeps to the
// task's deadline, measuring budget and cancellation as the server's TimingService does, on its
// FakeClock (tests/fakes/fake_clock.h), which a call's context should read too
// (CallContext::clock). It records what it was asked for.
#ifndef WAVECREST_TESTS_FAKES_FAKE_MEASURER_H_
#define WAVECREST_TESTS_FAKES_FAKE_MEASURER_H_

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cost_model.h"
#include "core/layers.h"
#include "service/convert.h"
#include "service/errors.h"
#include "service/measurer.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {

class FakeMeasurer final : public Measurer {
 public:
  // The device name a worker of the kind "h100-sxm" would report (ListDevices).
  static constexpr const char* kDevice = "NVIDIA H100 80GB HBM3 (fake)";

  bool up = true;                 // a worker of every kind is up
  bool layers_measurable = true;  // false: layers come back PREDICTED (no cuDNN, say)
  double gemm_factor = 1.0;       // measured = predicted × this
  std::function<double(const LayerKey&)> layer_factor = [](const LayerKey&) { return 1.0; };
  // Each measured unit takes this long on `clock` (which advances; nothing sleeps).
  absl::Duration per_unit = absl::ZeroDuration();
  // The time deadlines and budgets are read on; a call's context should read it too.
  FakeClock clock;
  // Units measured per task before its budget is spent (the rest predicted, as past measure_by);
  // negative: no limit.
  int64_t measure_limit = -1;

  // What was asked, in order.
  std::vector<GemmKey> gemms_asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return gemms_asked_;
  }
  std::vector<LayerKey> layers_asked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return layers_asked_;
  }

  absl::StatusOr<GpuTarget> ResolveGpu(absl::string_view name,
                                       absl::string_view field) const override {
    if (name == kDevice) return GpuTarget{"h100-sxm", *FindGpu("h100-sxm")};
    if (name.empty()) return FieldError(field, "required");
    absl::StatusOr<const GpuSpec*> gpu = FindGpu(name);
    if (!gpu.ok()) return gpu.status();
    return GpuTarget{(*gpu)->name, *gpu};
  }
  bool CanMeasure(absl::string_view) const override { return up; }
  bool MightMeasure(absl::string_view) const override { return true; }
  absl::Status NoWorkerError(absl::string_view kind) const override {
    return absl::UnavailableError(absl::StrCat("fake: no ", kind, " worker is up"));
  }

  absl::StatusOr<MeasureCounts> TimeGemms(const TimingTask& task,
                                          const std::function<void(size_t, v1::GemmTiming)>& emit,
                                          const TaskProgress& progress,
                                          const std::function<bool()>& cancelled) override {
    return Run(task, task.gemms.size(), progress, cancelled, [&](size_t i, bool measure) {
      const GemmKey& key = task.gemms[i];
      v1::GemmTiming t = TimingOf(key);
      const double predicted = PredictGemmTime(*task.gpu, key);
      t.set_time_s(measure ? predicted * gemm_factor : predicted);
      t.mutable_stats()->set_relative_spread(measure ? 0.01 : 0);
      t.mutable_provenance()->set_source(measure ? v1::SOURCE_MEASURED : v1::SOURCE_PREDICTED);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (measure) gemms_asked_.push_back(key);
      }
      emit(i, std::move(t));
    });
  }

  absl::StatusOr<MeasureCounts> TimeLayers(const LayerTask& task,
                                           const std::function<void(size_t, v1::LayerTiming)>& emit,
                                           const TaskProgress& progress,
                                           const std::function<bool()>& cancelled) override {
    return Run(task, task.layers.size(), progress, cancelled, [&](size_t i, bool measure) {
      const LayerKey& key = task.layers[i];
      measure = measure && layers_measurable;
      v1::LayerTiming t = LayerTimingOf(*task.gpu, key);
      const double predicted = PredictLayer(*task.gpu, key).time_s;
      t.set_time_s(measure ? predicted * layer_factor(key) : predicted);
      t.mutable_stats()->set_relative_spread(measure ? 0.02 : 0);
      t.mutable_provenance()->set_source(measure ? v1::SOURCE_MEASURED : v1::SOURCE_PREDICTED);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (measure) layers_asked_.push_back(key);
      }
      emit(i, std::move(t));
      return measure;
    });
  }

 private:
  // Each unit in order: CANCELLED or DEADLINE_EXCEEDED as soon as the call should stop; past
  // `measure_by` (or with no worker in MODE_AUTO) the rest is predicted, with a note.
  template <typename Task, typename Unit>
  absl::StatusOr<MeasureCounts> Run(const Task& task, size_t n, const TaskProgress& progress,
                                    const std::function<bool()>& cancelled, const Unit& unit) {
    if (task.mode == v1::MODE_MEASURED && !up) return NoWorkerError(task.kind);
    MeasureCounts summary;
    int64_t late = 0;
    for (size_t i = 0; i < n; ++i) {
      if (cancelled()) return absl::CancelledError("the call was cancelled");
      if (clock.Now() > task.deadline) return absl::DeadlineExceededError("deadline passed");
      const bool measure =
          up && task.mode != v1::MODE_PREDICTED && clock.Now() < task.measure_by &&
          (measure_limit < 0 || static_cast<int64_t>(i) < measure_limit);
      late += up && task.mode != v1::MODE_PREDICTED && !measure;
      if (measure) clock.Advance(per_unit);
      bool measured = measure;
      if constexpr (std::is_invocable_r_v<bool, Unit, size_t, bool>) {
        measured = unit(i, measure);
      } else {
        unit(i, measure);
      }
      (measured ? summary.measured : summary.predicted) += 1;
      progress(static_cast<int64_t>(i + 1), static_cast<int64_t>(n), "fake measuring");
    }
    if (late > 0) summary.notes.push_back(absl::StrCat(late, " not measured: budget spent"));
    return summary;
  }

  mutable std::mutex mu_;
  std::vector<GemmKey> gemms_asked_;
  std::vector<LayerKey> layers_asked_;
};

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_FAKES_FAKE_MEASURER_H_
