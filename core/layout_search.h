// The layout of a training run searched on a given number of GPUs: the tensor-, pipeline-,
// context- and expert-parallel degrees (data parallelism takes the rest), and for each the
// micro-batch, recomputation, ZeRO stage, offload and interleave PlanLayout and PlanMicroBatch
// choose (core/parallelism.h). Calculon-style: every legal combination is priced by the same step
// model the run's own answer uses, those whose memory fits are ranked by step time, and the
// runners-up say what costs them time against the winner. Everything here is a PREDICTION.
#ifndef WAVECREST_CORE_LAYOUT_SEARCH_H_
#define WAVECREST_CORE_LAYOUT_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/parallelism.h"
#include "core/prediction_memo.h"

namespace wavecrest {

// The degrees a search tries. Tensor parallelism: powers of two within the GPU's NVLink domain
// (its collectives sit on every layer's critical path; across nodes they would cross the
// network), dividing the heads, KV heads and MLP widths. Pipeline: divisors of the GPUs left
// that leave each stage at least kMinStageLayers layers. Context: powers of two while each rank
// keeps at least kMinContextTokens of the sequence (and none with local attention, which the
// model does not split). Expert: divisors of the experts up to the ranks that can hold them.
inline constexpr int64_t kMinStageLayers = 2;
inline constexpr int64_t kMinContextTokens = 4096;
// Layouts whose expected steps lie this close to the winner's are a near tie, which the answer
// says: how far the planner's ratio between two layouts of one model has been from published
// pairs. 405B interleaved against 1F1B (TorchTitan) 1.30x predicted, 1.28x measured; 8B on 128
// GPUs against 8, +1% against -3%; async TP's four speed-ups, each held out of the fitted share,
// -6.8% to +2.3% (bench/results/async_tp_share.txt); the all-to-all overlap pairs 7-8 points
// (docs/cli.md). PRIOR, not fitted: the middle of those misses.
inline constexpr double kLayoutNearTie = 0.05;

struct LayoutChoice {
  StepBreakdown step;
  // Against the winner: what costs this layout time ("+6.2%: pipeline bubble +1.10 s, TP
  // communication +0.31 s"; "a near tie" within kLayoutNearTie), or why it cannot run ("does not
  // fit: 104.2 GiB of 80"); "" for the winner.
  std::string why;
};

struct LayoutSearch {
  // The winner first (the least ExpectedStepS that fits), then the others that fit in that
  // order, then (when fewer fit) the closest to fitting; at most `shown`.
  std::vector<LayoutChoice> ranked;
  int64_t examined = 0;  // degree combinations priced
  int64_t fit = 0;       // of them, with a layout whose memory fits
  int64_t near_ties = 0;  // of the ranked after the winner, those within kLayoutNearTie of it
  // Where the layout with the shortest predicted step ranks below those shown (its kind's band
  // midpoint moved it): "; the shortest predicted step, ..." naming it and why; else "".
  std::string shortest_note;
  // The search in words, for the winner's assumptions: what was chosen among how many, and what
  // was held.
  std::string assumption;
};

// Which degrees the search may change: a degree the request stated (above 1) is held; `hold_all`
// holds every one (RunConfig.keep_degrees), leaving the search to PlanLayout's knobs.
struct HeldDegrees {
  bool tensor = false, pipeline = false, context = false, expert = false;
};
HeldDegrees HeldOf(const ModelSpec& requested, bool hold_all);

// Searches `run.num_gpus` GPUs (required, > 0) for `spec` in training. `spec.micro_batch_size`
// 0 lets PlanMicroBatch choose it for every combination (run.global_batch then required); the
// spec's own degrees are the held ones' values. FAILED_PRECONDITION when no combination is legal
// (the GPUs or the batch cannot be split); otherwise the ranked layouts, of which ranked[0] is the
// answer when it fits.
absl::StatusOr<LayoutSearch> SearchLayouts(const ModelSpec& spec, const GpuSpec& gpu,
                                           const RunConfig& run, const HeldDegrees& held,
                                           PredictionMemo* memo, size_t shown = 5);

// The step a measurement would most likely show: the predicted step moved by the midpoint of its
// kind's error band over the published runs (PlannerBands, as bench/results/planner_bands.txt has
// them), so that a kind the planner predicts too fast is not chosen for a gain smaller than its
// bias. The search ranks by it.
double ExpectedStepS(const StepBreakdown& b);

// " (held as given: TP 8, CP 2)": the degrees `held` keeps of `s`, or "" when none.
std::string HeldWords(const HeldDegrees& held, const ModelSpec& s);

// "TP 8 × PP 4 × DP 16" (CP and EP when above 1), the degrees of a step.
std::string DegreesName(const StepBreakdown& b);

// What costs `loser` time against `winner`, component by component (the two largest), or that it
// does not fit.
std::string WhyLoses(const StepBreakdown& loser, const StepBreakdown& winner);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_LAYOUT_SEARCH_H_
