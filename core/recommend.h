// The recommender: nearby model shapes at about the same parameter count, ranked by efficiency
// (model FLOP/s per GPU, i.e. MFU) so that no candidate wins by being smaller, with the reasons in
// words and the uncertainty of each speed-up.
//
// Stage 1 scores every candidate with a GEMM-time source (the analytic model by default); stage 2
// (service/recommend_logic.cc, through the Measurer) re-scores the best K and the baseline with
// measured times.
// Identical GEMMs across candidates are looked up once (ScoreCache).
#ifndef WAVECREST_CORE_RECOMMEND_H_
#define WAVECREST_CORE_RECOMMEND_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "core/model_spec.h"
#include "core/model_stats.h"

namespace wavecrest {
namespace recommend_detail {
struct BaseFacts;
}  // namespace recommend_detail

// kExperts (mixtures of experts): the experts' granularity at equal active parameters: m times
// as many experts, m times as many per token, 1/m of the width (and the reverse).
// The last four are not shapes to move but what a candidate otherwise holds to be the same model
// (HeldProperties), released by naming them: the query heads per KV head, the KV-cache bytes per
// token, a head dim of at least 64, a mixture of experts' total parameters.
enum class Knob {
  kHeads,
  kKvHeads,
  kHidden,
  kFfn,
  kVocab,
  kLayers,
  kExperts,
  kKvGroup,
  kKvCache,
  kHeadDim,
  kTotalParams
};
// "heads", "kv_heads", "hidden", "ffn", "vocab", "layers", "experts", "kv_group", "kv_cache",
// "head_dim", "total_params"; ParseKnob takes them with '-' for '_' too.
absl::string_view KnobName(Knob k);
absl::StatusOr<Knob> ParseKnob(absl::string_view name);
// True for the knobs that release a held property rather than move a shape.
bool ReleasesHold(Knob k);

// The parameters the recommender keeps about equal: all of them for a dense model, the active ones
// (router, k experts, shared experts) for a mixture of experts, whose candidates may differ in
// their total (finer experts) at the same work per token.
int64_t BudgetParams(const ModelSpec& spec, const ParamCounts& counts);

// `s` with `layers` layers, its layer mix kept: the same share of local-attention layers, the
// dense first layers fewer than the layers.
ModelSpec WithLayers(ModelSpec s, int64_t layers);

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
// What a candidate holds of the baseline unless `vary` releases it (the same model, reshaped):
// KV-cache bytes per token within kKvCacheTolerance, a head dim of at least kMinHeldHeadDim (or
// the baseline's, when smaller), and a mixture of experts' total parameters within
// kMoeTotalTolerance (its active ones are the budget, within param_tolerance).
inline constexpr double kKvCacheTolerance = 0.03;
inline constexpr int64_t kMinHeldHeadDim = 64;
inline constexpr double kMoeTotalTolerance = 0.03;
// Head dims a team can adopt: multiples of 16 (the attention kernels' and the tensor cores' unit;
// 64 and 128 are also what the paper's rule 3 and the fused kernels favour, and the cost model
// prices that). Applies to the default range; an explicit allowed_head_dims list is taken as given.
inline constexpr int64_t kDefaultHeadDimMultiple = 16;
// The tensor-parallel degrees a team may run when the request names none: of these, the ones the
// baseline itself shards evenly over (a model is never held to a degree it does not meet itself)
// and, when the caller knows the GPU, only those a run of the model would use
// (RecommendConstraints::run_tp, core/run_tp.h).
inline constexpr int64_t kDefaultTpOptions[] = {1, 2, 4, 8};
// A candidate beats the baseline when its speed-up exceeds 1 by more than its uncertainty (one
// standard deviation) and by this much: a smaller gain is not worth changing an architecture.
inline constexpr double kMinWorthwhileGain = 0.02;

struct RecommendConstraints {
  double param_tolerance = kDefaultParamTolerance;  // |Δparams| / params, in [0, 0.5]
  // The knobs that move (no shape knob = heads, hidden, ffn, vocab (+ layers)) and the held
  // properties released (ReleasesHold).
  std::set<Knob> vary;
  std::vector<int64_t> allowed_head_dims;           // empty = any in [32, 128]
  int64_t min_heads = 0;                            // 0 = 1
  int64_t max_heads = 0;                            // 0 = no limit
  bool keep_layers = false;
  int64_t max_candidates = kDefaultMaxCandidates;
  int top = kDefaultTop;
  // Further tensor-parallel degrees every candidate must also be legal for (heads, h and f
  // divisible by each; KV heads too, or replicated), beside the spec's own; empty = those of
  // kDefaultTpOptions the baseline is legal for. A candidate is never refused for a dimension it
  // keeps unchanged from the baseline.
  std::vector<int64_t> tensor_parallel_options;
  // Without tensor_parallel_options: the degrees a run of this model on the target GPU would use
  // (RunTpDegrees), with the reason in words; empty = every default degree the baseline meets.
  std::vector<int64_t> run_tp;
  std::string run_tp_source;
  // Require KV heads to divide by every degree. By default a candidate may have fewer KV heads
  // than a degree they divide: each rank then holds a copy of one, as Megatron does (priced:
  // Derive's kv_heads_per_rank is at least 1, so the K/V projections and the KV cache grow).
  bool kv_divisible = false;
  // Default head-dim range: only multiples of this (1 = any). Ignored with allowed_head_dims.
  int64_t head_dim_multiple = kDefaultHeadDimMultiple;
};

// A rule of RecommendConstraints that refused shapes while candidates were generated, how many,
// and the request field that loosens it.
struct Refusal {
  std::string rule;      // "heads_divisible_by_tp", ...
  int64_t count = 0;     // shapes (or head options, see `unit`) refused by this rule first
  std::string unit;      // "head options" or "shapes"
  std::string what;      // the rule in words
  std::string loosen;    // the request field (and CLI flag) that loosens it
};

// Shapes examined at most while generating candidates; a search space larger than this is refused
// with INVALID_ARGUMENT naming the knobs that make it large.
inline constexpr int64_t kMaxExaminedShapes = 2'000'000;

// Every problem with the constraints, with field names as in RecommendRequest.
std::vector<FieldViolation> ValidateConstraints(const RecommendConstraints& c);

// The knobs that move: the explicit shape knobs, or the default ones (the held properties a
// request releases are not among them).
std::set<Knob> EffectiveKnobs(const RecommendConstraints& c);

// What every candidate keeps of the baseline, and whether the request released it: the query
// heads per KV head ("kv_group"), the KV-cache bytes per token ("kv_cache"), the head-dim floor
// ("head_dim"), and for a mixture of experts its experts and top-k ("experts") and total
// parameters ("total_params"); the dense/MoE and local/global layer pattern ("layer_pattern",
// where the model has one) no knob changes.
struct HeldProperty {
  std::string name;  // the --vary name that releases it
  std::string what;  // "7 query heads per KV head"
  bool released = false;
};
std::vector<HeldProperty> HeldProperties(const ModelSpec& base, const RecommendConstraints& c);

// The head dim below which a candidate goes only when `vary` releases it: kMinHeldHeadDim, or the
// baseline's own when smaller; 0 when released.
int64_t HeadDimFloor(const ModelSpec& base, const RecommendConstraints& c);

// Candidate specs (normalized, valid, within the parameter tolerance, legal for every tensor-
// parallel degree asked and the spec's pipeline stages), the baseline first, then the rest in a
// deterministic order (smallest parameter change first), at most max_candidates in all; memory
// stays bounded by max_candidates as the search runs. `generated` counts every shape examined.
// `stop` is polled as the search runs (CANCELLED when it says so); a search space over
// kMaxExaminedShapes is INVALID_ARGUMENT before any work (retrying the same request cannot help).
// `refusals`, when given, receives each rule that refused something (in a fixed order).
absl::StatusOr<std::vector<ModelSpec>> GenerateCandidates(
    const ModelSpec& base, const RecommendConstraints& c, int64_t* generated,
    const std::function<bool()>& stop = nullptr, std::vector<Refusal>* refusals = nullptr);

// The tensor-parallel degrees every candidate must be legal for, where they came from, and where
// the baseline itself breaks them (only possible when the request named them).
struct TpRequirement {
  std::vector<int64_t> degrees;  // sorted: the spec's own and the options (or the defaults)
  bool from_options = false;     // the request's tensor_parallel_options
  std::vector<std::string> baseline_breaks;  // "12 heads do not divide by 8"
  // Why these: the run's degrees (RecommendConstraints::run_tp_source), "the degrees of 1, 2, 4,
  // 8 the baseline supports", or "tensor_parallel_options".
  std::string source;
};
TpRequirement RequiredTp(const ModelSpec& base, const RecommendConstraints& c);
// True when the request named the degrees (tensor_parallel_options): every candidate must then
// meet each of them in every dimension, those it keeps from the baseline included, so that a
// baseline that breaks them (30 heads at TP 8) gets candidates that do not (heads and KV heads
// moved to legal counts). Otherwise the degrees are ones the baseline meets, and a dimension a
// candidate keeps unchanged is never held against it.
inline bool StrictTp(const RecommendConstraints& c) { return !c.tensor_parallel_options.empty(); }
// Of `degrees`, those `s` is legal for: heads, hidden size and MLP width divisible by each; KV
// heads divisible, or (unless kv_divisible) fewer and dividing it (replicated). What each row of
// an answer says of itself (Candidate.tensor_parallel_legal).
std::vector<int64_t> LegalTp(const ModelSpec& s, const std::vector<int64_t>& degrees,
                             bool kv_divisible);
std::vector<int64_t> TpDegrees(const ModelSpec& base, const RecommendConstraints& c);

// The rules a shape must meet to be a candidate for `base` (tensor and pipeline parallelism, the
// parameter budget), as GenerateCandidates applies them: for checking a shape made another way
// (a candidate with one change undone, core/minimal_candidates.h).
class CandidateRules {
 public:
  CandidateRules(const ModelSpec& base, const RecommendConstraints& c);
  // The normalized shape when it may be a candidate; nullopt otherwise.
  std::optional<ModelSpec> Admit(const ModelSpec& s) const;
  const ModelSpec& base() const { return base_; }
  // The least common multiple of the required degrees (what sharded widths round to).
  int64_t tp_lcm() const;

 private:
  ModelSpec base_;
  RecommendConstraints c_;
  std::vector<int64_t> tps_;
  std::shared_ptr<const recommend_detail::BaseFacts> facts_;  // what every shape is checked with
};

// The time of one GEMM (not fused attention) and the relative spread of that time (0 when
// predicted), with whether it was measured.
struct GemmTime {
  double time_s = 0;
  double relative_spread = 0;  // measured: (p90 − p10) / median
  bool measured = false;
  // Predicted: the calibration's relative error band (measured/predicted − 1 at p10 and p90).
  double band_p10 = 0;
  double band_p90 = 0;
};
using GemmTimeFn = std::function<GemmTime(const GemmKey&)>;

// A prediction that shares an answer with measurements of the same GPU, scaled to agree with them.
// The analytic model is fitted to eager `torch.mm` sweeps, and a worker times in CUDA graphs: on
// the lent H100 the worker ran large aligned GEMMs 4-18% faster than the model predicts, and
// GEMMs of 1024^3 and below 2-3x faster (../shared/measurements/h100-compare-torch.txt). When a
// GPU-time budget ends part-way, the GEMMs left predicted would make the candidates that own them
// look slower than the ones measured in full. Each is scaled by the median measured/predicted
// ratio of the measured GEMMs of its class (dtype, 16-byte aligned or not) nearest to it in
// predicted time (up to kNeighbours of them, at least kMinSamples; else it stays as predicted).
class MeasuredScale {
 public:
  static constexpr size_t kNeighbours = 5;
  static constexpr size_t kMinSamples = 3;
  void Add(const GemmKey& key, double predicted_s, double measured_s);
  // The factor for a GEMM predicted at `predicted_s` (1 when its class has too few samples).
  double Factor(const GemmKey& key, double predicted_s) const;
  size_t samples() const;
  // The median ratio over every sample (1 when there are none): what a note reports.
  double MedianRatio() const;

 private:
  struct Sample {
    double log_predicted;
    double ratio;
  };
  // By (dtype as int, 16-byte aligned).
  std::map<std::pair<int, bool>, std::vector<Sample>> classes_;
};

// The time of one layer timed whole (core/layers.h), when a GPU measured it (or the cache had it).
struct LayerTime {
  double time_s = 0;
  double relative_spread = 0;  // (p90 − p10) / median
};
// nullopt: no measurement of this layer (the candidate's step is summed from its GEMMs).
using LayerTimeFn = std::function<std::optional<LayerTime>(const LayerKey&)>;

// Memoises GemmTimeFn over keys: identical GEMMs of different candidates cost one lookup.
class ScoreCache {
 public:
  explicit ScoreCache(GemmTimeFn fn) : fn_(std::move(fn)) {}
  const GemmTime& Get(const GemmKey& key);
  size_t distinct() const { return memo_.size(); }
  // A fused attention kernel: always predicted (PredictFusedAttention), memoised over what the
  // prediction reads (shape, dtype, pass, causal mask, FLOPs, window, KV heads).
  const GemmPrediction& FusedAttention(const GpuSpec& gpu, const Gemm& gemm);

 private:
  GemmTimeFn fn_;
  absl::flat_hash_map<GemmKey, GemmTime> memo_;
  absl::flat_hash_map<std::tuple<GemmKey, int, bool, double, int64_t, int64_t>, GemmPrediction>
      fused_;
};

// A GPU's answers for some GEMMs (measured, or predictions where it measured nothing) beside the
// model's predictions for the rest, as one source of times: measured answers as they are, every
// other time scaled by the MeasuredScale of the measured answers.
class MixedTimes {
 public:
  MixedTimes(absl::flat_hash_map<GemmKey, GemmTime> answers, ScoreCache& predicted);
  GemmTime Get(const GemmKey& key);
  const MeasuredScale& scale() const { return scale_; }
  int64_t unmeasured() const { return unmeasured_; }  // keys asked for without a measurement
  int64_t scaled() const { return scaled_; }          // of them, those given a factor other than 1

 private:
  absl::flat_hash_map<GemmKey, GemmTime> answers_;
  ScoreCache& predicted_;
  MeasuredScale scale_;
  int64_t unmeasured_ = 0;
  int64_t scaled_ = 0;
};

// One term of a candidate's step time. `id` names what ran (ContributionId): the same GEMM in two
// candidates has the same id, so its error cancels in their ratio.
struct Contribution {
  uint64_t id = 0;
  double time_s = 0;          // step time (× count)
  double relative_sigma = 0;  // its relative standard deviation
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
  // Of step_time_s, the share a GPU measured (GEMMs and whole layers); the rest is predicted.
  double measured_share = 0;
  // Of step_time_s, the share measured whole as transformer layers (L × the layer's time); 0 when
  // the step is summed from GEMMs, fused attention and the elementwise estimate.
  double layer_share = 0;
  double speedup = 1;              // Merit / baseline's: throughput at equal work
  double speedup_uncertainty = 0;  // one standard deviation of speedup (see RankCandidates)
  // Time and relative standard deviation of each distinct GEMM (and fused attention, a layer
  // measured whole, and the elementwise estimate) in the step, for the uncertainty of ratios
  // between candidates: sorted by id, one entry per id (ContributionId).
  std::vector<Contribution> contributions;
  // Time per GEMM name (all passes, × count), for the reasons; in the order BuildGemms names them.
  std::vector<std::pair<std::string, double>> time_by_gemm;
  std::vector<std::string> reasons;
  // Why RankCandidates put this winner above a faster-looking one (the smaller change among
  // candidates the model cannot tell apart), or empty.
  std::string ranked_note;
  // Each change against the baseline and what it alone accounts for (core/minimal_candidates.h);
  // empty until MinimizeCandidates has looked at this candidate.
  struct KnobGain {
    std::string change;  // "v 50257 → 50304"; a bundle's parts joined by " + "
    double gain = 1;     // Merit(this) / Merit(this without the change or bundle)
    double sigma = 0;    // relative standard deviation of gain
    // A coupled bundle: the single changes undone together (none can be undone alone).
    std::vector<std::string> parts;
    // Needed for the tensor-parallel degrees the request named, which the baseline breaks: never
    // undone, `gain` against the baseline (CandidateChange::required).
    bool required = false;
  };
  std::vector<KnobGain> knob_gains;
  bool minimized = false;
};

// Scores one candidate with `times` (fused attention and elementwise work predicted). With
// `layers` and a measurement of the candidate's whole layer, the step is L × that layer + the GEMMs
// outside the layers (logits) + the loss: attention, norms, activations and the gaps between
// kernels are then measured, not summed or estimated.
CandidateScore ScoreCandidate(const ModelSpec& spec, const GpuSpec& gpu, ScoreCache& times,
                              int64_t base_params, const LayerTimeFn& layers = nullptr);

// Ranks `scores` in place, one rule in every mode: the candidates that beat the baseline (Beats)
// first, then the baseline, then the rest; within each group by Merit (MFU: model FLOP/s per GPU
// at equal work, so a smaller model does not win by being smaller; decode: tokens/s at equal
// parameters), ties (within 1e-9 relative) by smaller |param change|, then by fewer fields
// changed against the baseline, then by (h, a, a_kv, d, f, v, L); identical shapes are dropped.
// So when nothing beats the baseline it is first ("keep your shape"). Among the winners, each of
// the first `explain` places goes to the smallest change among those the best one left does not
// beat beyond their ratio's uncertainty (fewer fields changed, a head dim moved to one not 64 or
// 128 last, then the smaller parameter change, then the nearest value; its reasons say so): a
// bundle that adds nothing beyond its uncertainty ranks after the smaller candidate. Fills
// speedup = merit / baseline's, its uncertainty, and the reasons of every non-baseline entry
// shown (what changed, which rules it satisfies or still breaks).
//
// Uncertainty: the errors of a GEMM's time are shared by every candidate that runs it, so they
// cancel in a ratio; speedup_uncertainty = speedup · sqrt(Σ_g σ_g² (t_g,base/T_base −
// t_g,cand/T_cand)²) over the distinct GEMMs g, σ_g the GEMM's relative standard deviation (the
// calibration band's (p90 − p10) / 2.56, or half the measured spread).
// Reasons are built for the first `explain` entries of the final order only (what a response
// shows); the others keep none.
void RankCandidates(std::vector<CandidateScore>& scores,
                    size_t explain = std::numeric_limits<size_t>::max());

// Relative standard deviation of Merit(b) / Merit(a): the errors of what both run cancel (see
// RankCandidates).
double RatioUncertainty(const CandidateScore& a, const CandidateScore& b);

// Whether the spec's head dim is 64 or 128, the sizes attention kernels are tuned for.
bool TunedHeadDim(const ModelSpec& spec);

// What candidates are ranked by: MFU (model FLOP/s per GPU at equal work), or for decode tokens
// per second per GPU at equal parameters (tokens/s × the candidate's parameters / the baseline's:
// the bytes a step reads per second, so a model does not win by being smaller; a KV cache that
// grows is in the step time at the stated cache length).
double Merit(const CandidateScore& c);
// What Merit compares, in words (RecommendResponse.speedup_basis).
std::string MeritBasis(const ModelSpec& spec);

// True when `c` is not the baseline and speedup − 1 > max(speedup_uncertainty, kMinWorthwhileGain).
bool Beats(const CandidateScore& c);

// Plain-words reasons for `c` against `base`: which rule the change satisfies and which GEMMs
// gained how much ("h/a 80 → 128 (rule 3, 7): attn_score 1.31× (predicted)").
std::vector<std::string> Explain(const CandidateScore& base, const CandidateScore& c);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_RECOMMEND_H_
