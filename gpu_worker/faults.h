// Test-only fault injection for wavecrest-worker (--fault ...): the supervision tests make a real
// worker process crash, hang, hit a sticky CUDA error, run out of memory or run slowly, on every
// GEMM or only on one shape.
#ifndef WAVECREST_GPU_WORKER_FAULTS_H_
#define WAVECREST_GPU_WORKER_FAULTS_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpu_worker/backend.h"

namespace wavecrest {

struct FaultPlan {
  enum class Kind { kNone, kCrash, kHang, kSticky, kOom, kSlow };
  Kind kind = Kind::kNone;
  std::optional<GemmShape> shape;  // only GEMMs with this m, n, k (any batch); all when unset
  int64_t after = 0;               // only from the (after+1)-th GEMM this process times
  int slow_ms = 500;               // kSlow: added to every matching GEMM
};

// kind: "", "crash", "hang", "sticky", "oom", "slow"; shape: "" or "MxNxK".
absl::StatusOr<FaultPlan> ParseFaultPlan(absl::string_view kind, absl::string_view shape,
                                         int64_t after, int slow_ms);

// `backend` with the plan's fault: crash = SIGSEGV, hang = never returns, sticky = INTERNAL and
// Broken(), oom = RESOURCE_EXHAUSTED, slow = sleeps first (sending heartbeats, as a long GEMM
// does).
std::unique_ptr<TimingBackend> WithFaults(std::unique_ptr<TimingBackend> backend,
                                          const FaultPlan& plan);

}  // namespace wavecrest

#endif  // WAVECREST_GPU_WORKER_FAULTS_H_
