// The Sweep RPC's work: throughput along one dimension of a model (h, a, a_kv, f, v, s, b, t) or
// of a GEMM (M, N, K), the pictures the paper is made of (the wave "sawtooth" of throughput
// against hidden size). Predicted by default; MODE_AUTO and MODE_MEASURED time the distinct GEMMs
// on a worker of the kind first (within a GPU-time budget) and score every point with them.
#ifndef WAVECREST_SERVICE_SWEEP_LOGIC_H_
#define WAVECREST_SERVICE_SWEEP_LOGIC_H_

#include "absl/status/statusor.h"
#include "service/recommend_logic.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

inline constexpr int64_t kMaxSweepPoints = 2000;

// "hidden", "heads", ... as the CLI spells them; INVALID_ARGUMENT listing them otherwise.
absl::StatusOr<v1::SweepDimension> ParseSweepDimension(absl::string_view name);
absl::string_view SweepDimensionName(v1::SweepDimension d);

// The values of the sweep (from, from + step, ..., <= to), or INVALID_ARGUMENT naming the field.
absl::StatusOr<std::vector<int64_t>> SweepValues(const v1::SweepRequest& request);

// Accepts a request before it is queued: its HF config imported, the GPU named, the range valid.
absl::StatusOr<v1::SweepRequest> AcceptSweep(v1::SweepRequest request);

// `context` as for Recommend (its measurer may be null: predictions only).
absl::StatusOr<v1::SweepResponse> RunSweep(const v1::SweepRequest& request,
                                           const CallContext& context);

// RunSweep for a stream: the answer (done) through `send`; returns where its GEMMs' times came
// from.
absl::StatusOr<MeasureCounts> StreamSweep(const v1::SweepRequest& request,
                                          const CallContext& context,
                                          const Send<v1::SweepResponse>& send);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_SWEEP_LOGIC_H_
