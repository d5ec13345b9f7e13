// Recommend, from request to response: constraints, candidates, the analytic stage over all of
// them, the measuring stage over the best K and the baseline, ranking and the answer.
#ifndef WAVECREST_SERVICE_RECOMMEND_LOGIC_H_
#define WAVECREST_SERVICE_RECOMMEND_LOGIC_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/recommend.h"
#include "service/measurer.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// Most entries of one repeated constraint field (vary, allowed_head_dims, ...).
inline constexpr int kMaxListEntries = 256;
inline constexpr int kDefaultMeasureTopK = 8;

// Reads the constraints of `request` (0 fields take their defaults). Violations name the fields.
absl::StatusOr<RecommendConstraints> ConstraintsFromRequest(const v1::RecommendRequest& request);

// Accepts a request before it is queued: its HF config imported into `model`, the GPU named, the
// constraints valid (violations name the fields). Returns the request to run.
absl::StatusOr<v1::RecommendRequest> AcceptRecommend(v1::RecommendRequest request);

// The ranking, measured through `context.measurer` when it has one (predictions only otherwise).
absl::StatusOr<v1::RecommendResponse> RunRecommend(const v1::RecommendRequest& request,
                                                   const CallContext& context);

// RunRecommend for a stream: the answer (done) goes through `send`, progress through the
// context; returns where its GEMMs' times came from.
absl::StatusOr<MeasureCounts> StreamRecommend(const v1::RecommendRequest& request,
                                              const CallContext& context,
                                              const Send<v1::RecommendResponse>& send);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_RECOMMEND_LOGIC_H_
