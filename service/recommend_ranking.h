// Inside Recommend (service/recommend_logic.h is its interface): one call's state across its
// stages, the measuring stage (recommend_measure.cc) and the answer (recommend_answer.cc);
// recommend_logic.cc reads the request and scores every candidate by the analytic model.
#ifndef WAVECREST_SERVICE_RECOMMEND_RANKING_H_
#define WAVECREST_SERVICE_RECOMMEND_RANKING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/gpu_catalog.h"
#include "core/memory.h"
#include "core/minimal_candidates.h"
#include "core/recommend.h"
#include "service/measurer.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace recommend_internal {

// One Recommend call's state across its stages.
struct Ranking {
  GpuTarget gpu;
  v1::Mode mode = v1::MODE_AUTO;
  RecommendConstraints constraints;
  std::optional<CandidateRules> rules;  // what an undone change must meet (MinimizeCandidates)
  int64_t base_params = 0;
  std::vector<CandidateScore> scores;          // by the analytic model, ranked
  std::vector<CandidateScore> measured_group;  // re-scored with measurements, ranked
  v1::RecommendResponse response;
};

// Stage 2: the best K and the baseline, measured within the GPU-time budget and re-scored.
absl::Status MeasureBest(const CallContext& ctx, const v1::RecommendRequest& request,
                         ScoreCache& predicted, Ranking& r);

// The answer: the measured group first, then the predicted ones; the top N plus the baseline,
// the verdict, and a note when the leaders cannot be told apart.
void Answer(Ranking& r);

// "does not fit: needs 92.1 GiB per GPU, more than 90% of the h100-sxm's 80 GiB (estimate)" for
// a candidate that does not fit (with "; fits with full activation recomputation" when it
// would), or empty.
std::string MemoryReason(const MemoryEstimate& m, const GpuSpec& gpu);

}  // namespace recommend_internal
}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_RECOMMEND_RANKING_H_
