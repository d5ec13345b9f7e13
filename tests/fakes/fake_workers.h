// Fake GPU workers (server/timing_service.h GpuWorkers) for in-process tests of the server: the
// analytic model stands in for the GPU, on a fake clock (tests/fakes/fake_clock.h).
#ifndef WAVECREST_TESTS_FAKES_FAKE_WORKERS_H_
#define WAVECREST_TESTS_FAKES_FAKE_WORKERS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "server/timing_service.h"
#include "service/convert.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {

// GPU workers of one kind that answer every GEMM with the analytic model's time, labelled as a
// GPU's measurement (SOURCE_MEASURED, the cuBLASLt method): what the server does with measured
// results is tested without a GPU. Layers are not timed whole (the default: UNIMPLEMENTED).
class FakeWorkers final : public GpuWorkers {
 public:
  // The one GPU kind they have.
  static constexpr char kKind[] = "h100-sxm";

  explicit FakeWorkers(FakeClock* clock) : clock_(clock) {
    fp_.set_name("Fake H100");
    fp_.set_catalog_name(kKind);
    fp_.set_backend("fake");
    fp_.set_sm_count(132);
  }
  bool CanMeasure(absl::string_view kind) const override { return kind == kKind; }
  bool MightMeasure(absl::string_view kind) const override { return kind == kKind; }
  std::optional<v1::DeviceFingerprint> Fingerprint(absl::string_view kind) const override {
    if (kind != kKind) return std::nullopt;
    return fp_;
  }
  std::optional<std::string> KindOfDevice(absl::string_view device_name) const override {
    if (device_name == fp_.name()) return std::string(kKind);
    return std::nullopt;
  }
  absl::Status Measure(absl::string_view kind, const std::vector<GemmKey>& keys,
                       const MeasureOptions& options, const MeasureCallback& on_result,
                       const std::function<bool()>& cancelled) override {
    if (kind != kKind) return absl::UnavailableError("no worker of that kind");
    const GpuSpec& gpu = **FindGpu(kKind);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (cancelled && cancelled()) return absl::CancelledError("cancelled");
      // As the worker pool does: a measurement that would start past the deadline is not made.
      if (clock_->Now() > options.deadline) return absl::DeadlineExceededError("deadline passed");
      clock_->Advance(per_gemm);
      ++measured_;
      v1::GemmTiming t = TimingOf(keys[i]);
      const GemmPrediction p = PredictGemm(gpu, keys[i]);
      t.set_time_s(p.time_s);
      t.set_tflops(p.tflops);
      v1::Provenance* prov = t.mutable_provenance();
      prov->set_source(v1::SOURCE_MEASURED);
      prov->set_method(TimingMethod("cublaslt", options.autotune, options.warm_l2));
      *prov->mutable_device() = fp_;
      prov->set_samples(20);
      on_result(i, t);
    }
    return absl::OkStatus();
  }
  int64_t ClearQuarantine(absl::string_view kind) override {
    return kind.empty() || kind == kKind ? quarantined_.exchange(0) : 0;
  }
  void AddWorkers(v1::ListDevicesResponse* response, bool internal) const override {
    v1::WorkerDevice* w = response->add_workers();
    w->set_id("fake-0");
    *w->mutable_device() = fp_;
    w->set_up(true);
    if (internal) w->set_address("in-process");
  }

  int64_t measured() const { return measured_.load(); }
  void Quarantine(int64_t n) { quarantined_ = n; }
  absl::Duration per_gemm = absl::ZeroDuration();  // on the fake clock

 private:
  FakeClock* clock_;
  v1::DeviceFingerprint fp_;
  std::atomic<int64_t> measured_{0};
  std::atomic<int64_t> quarantined_{0};
};

}  // namespace wavecrest

#endif  // WAVECREST_TESTS_FAKES_FAKE_WORKERS_H_
