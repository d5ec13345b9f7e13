#include "gpu_worker/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "core/layer_emulation.h"
#include "core/layer_program.h"
#include "service/convert.h"

namespace wavecrest {

absl::StatusOr<TimingParams> ParamsFromProto(const v1::TimingOptions& o) {
  TimingParams p;
  p.autotune = o.autotune();
  p.warm_l2 = o.warm_l2();
  if (o.autotune_top_k() < 0 || o.autotune_top_k() > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.autotune_top_k: ", o.autotune_top_k(), " is outside [0, 64]"));
  }
  if (o.autotune_top_k() > 0) p.top_k = o.autotune_top_k();
  if (!(o.target_relative_spread() >= 0 && o.target_relative_spread() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.target_relative_spread: ", o.target_relative_spread(), " is outside [0, 1]"));
  }
  if (o.target_relative_spread() > 0) p.target_spread = o.target_relative_spread();
  if (!(o.max_seconds_per_gemm() >= 0 && o.max_seconds_per_gemm() <= 600)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_seconds_per_gemm: ", o.max_seconds_per_gemm(), " is outside [0, 600]"));
  }
  if (o.max_seconds_per_gemm() > 0) p.max_seconds = o.max_seconds_per_gemm();
  if (!(o.watchdog_s() >= 0 && o.watchdog_s() <= 86400)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.watchdog_s: ", o.watchdog_s(), " is outside [0, 86400]"));
  }
  p.watchdog_s = o.watchdog_s();
  return p;
}

namespace {

class AnalyticBackend final : public TimingBackend {
 public:
  explicit AnalyticBackend(const GpuSpec* gpu) : gpu_(gpu) {
    fp_ = PredictedProvenance(*gpu, DType::kBf16, 0).device();
    fp_.set_name(absl::StrCat("emulated ", gpu->display_name));
  }

  v1::DeviceFingerprint Fingerprint() const override { return fp_; }
  int64_t FreeMemoryBytes() override { return 0; }

  absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) override {
    if (!gpu_->Supports(key.dtype)) {
      return absl::FailedPreconditionError(
          absl::StrCat(gpu_->name, " has no tensor-core support for ", DTypeName(key.dtype)));
    }
    // The checks the cuBLASLt engine makes before it allocates (sizes, FP8 rules, memory, cold L2,
    // the watchdog), against the emulated GPU with all its memory free: what a GPU worker would
    // refuse, the emulating one refuses too.
    DeviceLimits device;
    device.compute_capability = gpu_->compute_capability;
    device.l2_bytes = gpu_->l2_bytes;
    device.free_bytes = gpu_->memory_bytes;
    const EngineOptions options = EngineOptionsOf(params);
    if (absl::StatusOr<GemmPlan> plan = PlanGemm(key, device, options); !plan.ok()) {
      return absl::Status(plan.status().code(),
                          absl::StrCat(plan.status().message(), " (emulated ", gpu_->name, ")"));
    }
    const GemmPrediction p = PredictGemm(*gpu_, key);
    if (absl::Status st = CheckWatchdog(p.time_s, options, key); !st.ok()) return st;
    v1::GemmTiming t = TimingOf(key);
    t.set_time_s(p.time_s);
    t.set_tflops(p.tflops);
    v1::Provenance* prov = t.mutable_provenance();
    prov->set_source(v1::SOURCE_PREDICTED);
    prov->set_method(TimingMethod("analytic", params.autotune, params.warm_l2));
    prov->set_calibration(gpu_->Calibration(key.dtype).label);
    prov->set_error_band_p10(p.band_p10);
    prov->set_error_band_p90(p.band_p90);
    *prov->mutable_device() = fp_;
    prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    return t;
  }

  // The layer's program priced kernel by kernel (core/layer_emulation.h), labelled as this
  // emulating worker's answer, beside the planner's sum of parts. What the GPU engine would refuse
  // (no program: FP8, unfused latent attention; a size beyond memory), this one refuses too.
  absl::StatusOr<v1::LayerTiming> TimeLayer(const LayerKey& key,
                                            const TimingParams& params) override {
    if (!gpu_->Supports(key.layer.dtype)) {
      return absl::FailedPreconditionError(
          absl::StrCat(gpu_->name, " has no tensor-core support for ", DTypeName(key.layer.dtype)));
    }
    absl::StatusOr<LayerProgram> program = PlanLayerProgram(key);
    if (!program.ok()) {
      return absl::Status(program.status().code(),
                          absl::StrCat(program.status().message(), " (emulated ", gpu_->name, ")"));
    }
    if (program->bytes > gpu_->memory_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(LayerKeyString(key), " needs ", program->bytes >> 20,
                       " MiB of device memory; the emulated ", gpu_->name, " has ",
                       gpu_->memory_bytes >> 20, " MiB"));
    }
    v1::LayerTiming t = PredictedLayerTiming(*gpu_, key);
    const LayerEmulation e = EmulateLayerProgram(*gpu_, key, *program);
    t.set_time_s(e.time_s);
    t.set_tflops(e.time_s > 0 ? t.flops() / e.time_s / 1e12 : 0);
    t.set_predicted_program_s(e.time_s);
    v1::Provenance* prov = t.mutable_provenance();
    prov->set_error_band_p10(e.band_p10);
    prov->set_error_band_p90(e.band_p90);
    prov->set_method(LayerTimingMethod("analytic", params.warm_l2));
    *prov->mutable_device() = fp_;
    prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    return t;
  }

 private:
  const GpuSpec* gpu_;
  v1::DeviceFingerprint fp_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeAnalyticBackend(absl::string_view emulate) {
  absl::StatusOr<const GpuSpec*> gpu = FindGpu(emulate);
  if (!gpu.ok()) return gpu.status();
  return std::unique_ptr<TimingBackend>(new AnalyticBackend(*gpu));
}

}  // namespace wavecrest
