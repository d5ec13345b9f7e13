// The recommender: nearby model shapes at about the same parameter count, ranked by step time,
// with the reasons in words.
//
// Stage 1 scores every candidate with a GEMM-time source (the analytic model by default); stage 2
// (in server/recommend_handler.cc) re-scores the best K and the baseline with measured times.
// Identical GEMMs across candidates are looked up once (ScoreCache).
#ifndef WAVECREST_CORE_RECOMMEND_H_
#define WAVECREST_CORE_RECOMMEND_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "core/model_stats.h"

namespace wavecrest {

enum class Knob { kHeads, kKvHeads, kHidden, kFfn, kVocab, kLayers };
absl::string_view KnobName(Knob k);  // "heads", "kv_heads", "hidden", "ffn", "vocab", "layers"
absl::StatusOr<Knob> ParseKnob(absl::string_view name);

inline constexpr double kDefaultParamTolerance = 0.02;
inline constexpr int64_t kDefaultMaxCandidates = 5000;
inline constexpr int64_t kMaxMaxCandidates = 100000;
inline constexpr int kDefaultTop = 10;
// How far hidden_size may move (relative) when layers may compensate: nearby shapes, not a
// different model.
inline constexpr double kHiddenWindow = 0.05;
// Head dims searched when the request names none: what accuracy studies and today's models use.
// The paper's rule 7 (larger h/a runs faster) is bounded by accuracy; the caller widens this with
// allowed_head_dims. The baseline's own head dim is always allowed.
inline constexpr int64_t kDefaultMinHeadDim = 32;
inline constexpr int64_t kDefaultMaxHeadDim = 128;

struct RecommendConstraints {
  double param_tolerance = kDefaultParamTolerance;  // |Δparams| / params, in [0, 0.5]
  std::set<Knob> vary;                              // empty = heads, hidden, ffn, vocab (+ layers)
  std::vector<int64_t> allowed_head_dims;           // empty = any in [32, 128]
  int64_t min_heads = 0;                            // 0 = 1
  int64_t max_heads = 0;                            // 0 = no limit
  bool keep_layers = false;
  int64_t max_candidates = kDefaultMaxCandidates;
  int top = kDefaultTop;
};

// Every problem with the constraints, with field names as in RecommendRequest.
std::vector<FieldViolation> ValidateConstraints(const RecommendConstraints& c);

// The knobs that move: the explicit set, or the default one.
std::set<Knob> EffectiveKnobs(const RecommendConstraints& c);

// Candidate specs (normalized, valid, within the parameter tolerance), the baseline first, then
// the rest in a deterministic order, at most max_candidates in all. `generated` counts every
// shape examined before the tolerance and the cap.
std::vector<ModelSpec> GenerateCandidates(const ModelSpec& base, const RecommendConstraints& c,
                                          int64_t* generated);

// The time of one GEMM (not fused attention) and the relative spread of that time (0 when
// predicted), with whether it was measured.
struct GemmTime {
  double time_s = 0;
  double relative_spread = 0;
  bool measured = false;
};
using GemmTimeFn = std::function<GemmTime(const GemmKey&)>;

// Memoises GemmTimeFn over keys: identical GEMMs of different candidates cost one lookup.
class ScoreCache {
 public:
  explicit ScoreCache(GemmTimeFn fn) : fn_(std::move(fn)) {}
  const GemmTime& Get(const GemmKey& key);
  size_t distinct() const { return memo_.size(); }

 private:
  GemmTimeFn fn_;
  absl::flat_hash_map<GemmKey, GemmTime> memo_;
};

struct CandidateScore {
  ModelSpec spec;
  bool baseline = false;
  ParamCounts params;
  double param_change = 0;
  double gemm_time_s = 0;         // Σ count × time (GEMMs and fused attention)
  double elementwise_time_s = 0;  // estimated
  double step_time_s = 0;
  double step_sigma_s = 0;  // from measurement spreads
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  bool all_measured = false;  // every GEMM (not fused attention) measured or cached
  double speedup = 1;
  double speedup_uncertainty = 0;
  // Time per GEMM name (all passes, × count), for the reasons.
  std::vector<std::pair<std::string, double>> time_by_gemm;
  std::vector<std::string> reasons;
};

// Scores one candidate with `times` (fused attention and elementwise work always predicted).
CandidateScore ScoreCandidate(const ModelSpec& spec, const GpuSpec& gpu, ScoreCache& times,
                              int64_t base_params);

// Ranks `scores` in place: by step time, ties (within 1e-9 relative) by smaller |param change|,
// then by fewer fields changed against the baseline, then by (h, a, a_kv, d, f, v, L). Fills
// speedup (and its uncertainty) against the baseline entry and the reasons of every non-baseline
// entry. `measured_label` says how GEMM gains were obtained.
void RankCandidates(std::vector<CandidateScore>& scores);

// Plain-words reasons for `c` against `base`: which rule the change satisfies and which GEMMs
// gained how much ("h/a 80 → 128 (rule 3, 7): attn_score 1.31× (predicted)").
std::vector<std::string> Explain(const CandidateScore& base, const CandidateScore& c);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_RECOMMEND_H_
