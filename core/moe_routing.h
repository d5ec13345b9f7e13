// How a mixture-of-experts layer's tokens spread over its experts, for the layer program's grouped
// expert GEMMs (core/layer_program.h): per-expert token counts from a stated routing distribution.
//
//   balanced   every expert gets ceil(T·k·e / E) rows: the routing a load-balancing loss aims at,
//              and exactly what the planner's batched expert GEMM prices (core/gemm.h).
//   zipf S     expert i (by load, i = 0 the busiest) gets a share ∝ 1/(i + 1)^S of the T·k·e
//              routed copies, no expert more than T·e (a token picks an expert at most once);
//              rounded to whole rows by largest remainder, so the counts sum to the copies. A
//              router early in training, or one without an auxiliary loss, is skewed like this;
//              S = 0 is balanced, S = 1 gives the busiest of 8 experts about 37% of the copies.
//   counts     the user's own counts (one per expert), scaled to the copies the same way.
//
// Under expert parallelism (e ranks, E/e experts each) the rank timed is the one holding the
// busiest E/e experts: the rank the step waits for. With a capacity factor C every expert runs C
// times its balanced share (padded or dropped to it), whatever the routing.
#ifndef WAVECREST_CORE_MOE_ROUTING_H_
#define WAVECREST_CORE_MOE_ROUTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

inline constexpr double kMaxZipfExponent = 4.0;
inline constexpr size_t kMaxRoutingCounts = kMaxExperts;

struct MoeRouting {
  double zipf = 0;               // 0: balanced (unless counts are given)
  std::vector<int64_t> counts;  // relative loads per expert, busiest first once sorted
  bool balanced() const { return zipf == 0 && counts.empty(); }
  friend bool operator==(const MoeRouting&, const MoeRouting&) = default;
};

// "balanced", "zipf1.2", "counts:40,30,20,10".
std::string RoutingName(const MoeRouting& routing);
// "balanced", "zipf:S" (or "zipfS") with 0 <= S <= kMaxZipfExponent, "counts:N,N,...". Errors
// name `field` (when not empty) and the allowed forms.
absl::StatusOr<MoeRouting> ParseRouting(absl::string_view text, absl::string_view field);
// INVALID_ARGUMENT naming `field` when `routing` does not fit a layer of `num_experts` experts
// (counts: one per expert, non-negative, not all zero).
absl::Status CheckRouting(const MoeRouting& routing, int64_t num_experts, absl::string_view field);

// The rows of each of this rank's experts in one MoE layer of the normalized `layer` spec (its
// Derive(): tokens, experts_per_token, expert_parallel, capacity factor), busiest first: E/e
// entries. Empty for a dense layer.
std::vector<int64_t> ExpertTokenCounts(const ModelSpec& layer, const MoeRouting& routing);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MOE_ROUTING_H_
