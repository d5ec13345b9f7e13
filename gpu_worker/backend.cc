#include "gpu_worker/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "server/convert.h"

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
  return p;
}

namespace {

// Bytes of A, B and C of one GEMM (C in the operand type, FP8 GEMMs write BF16).
int64_t OperandBytes(const GemmKey& key) {
  const int64_t e = DTypeBytes(key.dtype);
  const int64_t c = key.dtype == DType::kFp8E4M3 ? 2 : e;
  const GemmShape& s = key.shape;
  return s.batch * (s.m * s.k * e + s.k * s.n * e + s.m * s.n * c);
}

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
    // The same memory check the cuBLASLt backend makes, against the emulated GPU's memory.
    if (OperandBytes(key) > gpu_->memory_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(GemmKeyString(key), " needs ", OperandBytes(key) >> 20, " MiB; ", gpu_->name,
                       " has ", gpu_->memory_bytes >> 20, " MiB"));
    }
    const GemmPrediction p = PredictGemm(*gpu_, key);
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

 private:
  const GpuSpec* gpu_;
  v1::DeviceFingerprint fp_;
};

}  // namespace

int64_t GemmOperandBytes(const GemmKey& key) { return OperandBytes(key); }

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeAnalyticBackend(absl::string_view emulate) {
  absl::StatusOr<const GpuSpec*> gpu = FindGpu(emulate);
  if (!gpu.ok()) return gpu.status();
  return std::unique_ptr<TimingBackend>(new AnalyticBackend(*gpu));
}

}  // namespace wavecrest
