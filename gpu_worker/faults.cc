#include "gpu_worker/faults.h"

#include <csignal>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace wavecrest {

absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view kind, absl::string_view shape,
                                         int64_t after, int slow_ms) {
  FaultPlan p;
  if (kind.empty()) {
    p.kind = FaultPlan::Kind::kNone;
  } else if (kind == "crash") {
    p.kind = FaultPlan::Kind::kCrash;
  } else if (kind == "hang") {
    p.kind = FaultPlan::Kind::kHang;
  } else if (kind == "sticky") {
    p.kind = FaultPlan::Kind::kSticky;
  } else if (kind == "oom") {
    p.kind = FaultPlan::Kind::kOom;
  } else if (kind == "slow") {
    p.kind = FaultPlan::Kind::kSlow;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--fault: \"", kind, "\" is not one of crash, hang, sticky, oom, slow"));
  }
  if (!shape.empty()) {
    std::vector<absl::string_view> parts = absl::StrSplit(shape, 'x');
    GemmShape s;
    if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &s.m) ||
        !absl::SimpleAtoi(parts[1], &s.n) || !absl::SimpleAtoi(parts[2], &s.k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fault_shape: \"", shape, "\" is not MxNxK"));
    }
    p.shape = s;
  }
  if (after < 0) return absl::InvalidArgumentError("--fault_after: must be >= 0");
  if (slow_ms < 0 || slow_ms > 600000) {
    return absl::InvalidArgumentError("--fault_slow_ms: must be in [0, 600000]");
  }
  p.after = after;
  p.slow_ms = slow_ms;
  return p;
}

namespace {

class FaultyBackend final : public TimingBackend {
 public:
  FaultyBackend(std::unique_ptr<TimingBackend> inner, FaultPlan plan)
      : inner_(std::move(inner)), plan_(plan) {}

  v1::DeviceFingerprint Fingerprint() const override { return inner_->Fingerprint(); }
  int64_t FreeMemoryBytes() override { return inner_->FreeMemoryBytes(); }
  bool Broken() const override { return broken_ || inner_->Broken(); }

  absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) override {
    const bool applies =
        seen_++ >= plan_.after &&
        (!plan_.shape || (plan_.shape->m == key.shape.m && plan_.shape->n == key.shape.n &&
                          plan_.shape->k == key.shape.k));
    if (applies) RETURN_IF_ERROR(Inject(GemmKeyString(key), params));
    return inner_->Time(key, params);
  }

  // Layers get the plan's fault too, unless it names a GEMM shape.
  absl::StatusOr<v1::LayerTiming> TimeLayer(const LayerKey& key,
                                            const TimingParams& params) override {
    if (seen_++ >= plan_.after && !plan_.shape) {
      RETURN_IF_ERROR(Inject(LayerKeyString(key), params));
    }
    return inner_->TimeLayer(key, params);
  }

 private:
  // The fault, for the GEMM or layer named `what`: returns (an error) or does not (crash, hang).
  absl::Status Inject(const std::string& what, const TimingParams& params) {
    switch (plan_.kind) {
      case FaultPlan::Kind::kNone:
        break;
      case FaultPlan::Kind::kCrash:
        std::raise(SIGSEGV);
        break;
      case FaultPlan::Kind::kHang:
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      case FaultPlan::Kind::kSticky:
        broken_ = true;
        return absl::InternalError(
            "cudaErrorIllegalAddress: an illegal memory access was encountered (injected by "
            "--fault=sticky); the CUDA context is unusable");
      case FaultPlan::Kind::kOom:
        return absl::ResourceExhaustedError(
            absl::StrCat(what, " does not fit in free device memory (injected by --fault=oom)"));
      case FaultPlan::Kind::kSlow: {
        // A long GEMM: it beats as the engine does between its replays.
        const absl::Time end = absl::Now() + absl::Milliseconds(plan_.slow_ms);
        while (absl::Now() < end) {
          absl::SleepFor(std::min(absl::Milliseconds(100), end - absl::Now()));
          if (params.heartbeat) params.heartbeat("sampling");
        }
        break;
      }
    }
    return absl::OkStatus();
  }

  std::unique_ptr<TimingBackend> inner_;
  FaultPlan plan_;
  int64_t seen_ = 0;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<TimingBackend> WithFaults(std::unique_ptr<TimingBackend> backend,
                                          const FaultPlan& plan) {
  if (plan.kind == FaultPlan::Kind::kNone) return backend;
  return std::make_unique<FaultyBackend>(std::move(backend), plan);
}

}  // namespace wavecrest
