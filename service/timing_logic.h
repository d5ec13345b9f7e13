// TimeGemms and TimeLayers, from request to timings: validation and planning (the distinct GEMMs
// or layers, what each is used by, the GPU-time cap), then the timings through the Measurer,
// streamed as they arrive.
#ifndef WAVECREST_SERVICE_TIMING_LOGIC_H_
#define WAVECREST_SERVICE_TIMING_LOGIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "service/measurer.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// Most GEMMs one TimeGemms request may ask for.
inline constexpr int kMaxGemmsPerRequest = 4096;
// Largest GEMM dimension accepted (cuBLASLt takes 32-bit sizes).
inline constexpr int64_t kMaxGemmDim = (int64_t{1} << 31) - 1;
// Largest FLOPs of one GEMM accepted (about a minute at petaflop rates).
inline constexpr double kMaxGemmFlops = 1e17;
// GPU time one TimeGemms or TimeLayers request may ask for, predicted before any work, seconds.
inline constexpr double kMaxGpuSecondsPerRequest = 1800;

// The validated work of a TimeGemms request.
struct TimeGemmsPlan {
  TimingTask task;
  std::vector<std::vector<std::string>> used_by;  // per distinct GEMM: "qkv forward", ...
};
// Validates `request` (its HF config imported first; violations name the fields) and plans its
// distinct GEMMs on the GPU `measurer` resolves; a request that would hold a GPU longer than
// kMaxGpuSecondsPerRequest is refused before any work.
absl::StatusOr<TimeGemmsPlan> AcceptTimeGemms(v1::TimeGemmsRequest request,
                                              const Measurer& measurer);
// Times the plan's GEMMs: a first progress message, then each timing (with its index and uses)
// as it arrives, progress, and the notes; returns where the times came from.
absl::StatusOr<MeasureCounts> StreamTimeGemms(const TimeGemmsPlan& plan, const CallContext& ctx,
                                              const Send<v1::TimeGemmsResponse>& send);

// The validated work of a TimeLayers request (layers in the request's order, distinct).
absl::StatusOr<LayerTask> AcceptTimeLayers(v1::TimeLayersRequest request,
                                           const Measurer& measurer);
absl::StatusOr<MeasureCounts> StreamTimeLayers(const LayerTask& task, const CallContext& ctx,
                                               const Send<v1::TimeLayersResponse>& send);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_TIMING_LOGIC_H_
