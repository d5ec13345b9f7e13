// A candidate's predicted (or measured) step time: the score caches, measured/predicted scaling,
// each GEMM's contribution and its uncertainty, and the uncertainty of a speed-up
// (core/recommend.h, ScoreCandidate and RatioUncertainty).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/attention_cost.h"
#include "core/elementwise_cost.h"
#include "core/recommend.h"
#include "core/recommend_detail.h"
#include "core/rules.h"
#include "core/sample_policies.h"
#include "core/timing_stats.h"

namespace wavecrest {

const GemmTime& ScoreCache::Get(const GemmKey& key) {
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  return memo_.emplace(key, fn_(key)).first->second;
}

void MeasuredScale::Add(const GemmKey& key, double predicted_s, double measured_s) {
  if (!(predicted_s > 0) || !(measured_s > 0) || !std::isfinite(predicted_s) ||
      !std::isfinite(measured_s)) {
    return;
  }
  classes_[{static_cast<int>(key.dtype), AlignedGemm(key)}].push_back(
      {std::log(predicted_s), measured_s / predicted_s});
}

double MeasuredScale::Factor(const GemmKey& key, double predicted_s) const {
  const auto it = classes_.find({static_cast<int>(key.dtype), AlignedGemm(key)});
  if (it == classes_.end() || it->second.size() < kMinSamples || !(predicted_s > 0)) return 1;
  std::vector<Sample> near = it->second;
  const double at = std::log(predicted_s);
  const size_t n = std::min(kNeighbours, near.size());
  // Nearest first; ties broken by the values themselves, so that the answer never depends on the
  // order the measurements came in (same inputs, same ranking).
  auto order = [at](const Sample& x) {
    return std::make_tuple(std::abs(x.log_predicted - at), x.log_predicted, x.ratio);
  };
  std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(n), near.end(),
                    [&](const Sample& a, const Sample& b) { return order(a) < order(b); });
  std::vector<double> ratios;
  for (size_t i = 0; i < n; ++i) ratios.push_back(near[i].ratio);
  return Percentile(std::move(ratios), 0.5);
}

size_t MeasuredScale::samples() const {
  size_t n = 0;
  for (const auto& [c, v] : classes_) n += v.size();
  return n;
}

double MeasuredScale::MedianRatio() const {
  std::vector<double> all;
  for (const auto& [c, v] : classes_) {
    for (const Sample& s : v) all.push_back(s.ratio);
  }
  return all.empty() ? 1 : Percentile(std::move(all), 0.5);
}

MixedTimes::MixedTimes(absl::flat_hash_map<GemmKey, GemmTime> answers, ScoreCache& predicted)
    : answers_(std::move(answers)), predicted_(predicted) {
  for (const auto& [key, t] : answers_) {
    if (t.measured) scale_.Add(key, predicted_.Get(key).time_s, t.time_s);
  }
}

GemmTime MixedTimes::Get(const GemmKey& key) {
  auto it = answers_.find(key);
  GemmTime t = it != answers_.end() ? it->second : predicted_.Get(key);
  if (t.measured) return t;
  ++unmeasured_;
  const double f = scale_.Factor(key, t.time_s);
  scaled_ += f != 1;
  t.time_s *= f;
  return t;
}

const GemmPrediction& ScoreCache::FusedAttention(const GpuSpec& gpu, const Gemm& gemm) {
  // kv_batch too: under GQA the same query shape reads as many K and V heads as the model has
  // (decode's time is mostly that), so shapes differing only in KV heads must not share it.
  auto key = std::make_tuple(gemm.key(), static_cast<int>(gemm.pass), gemm.causal, gemm.flops,
                             gemm.window, gemm.kv_batch);
  auto it = fused_.find(key);
  if (it != fused_.end()) return it->second;
  return fused_.emplace(std::move(key), PredictFusedAttention(gpu, gemm)).first->second;
}

namespace {

// Relative standard deviation of a time from its p10–p90 band (a normal's p10–p90 spans 2.56σ).
double SigmaOfBand(double p10, double p90) { return std::max(0.0, p90 - p10) / 2.56; }

// What a contribution's id hashes besides its identity (so a GEMM and a fused attention of the
// same shape never share one). Ids are 64-bit hashes: two different terms of one pair of
// candidates collide with odds near 1e-16, and a collision only merges two σ's. The hash is fixed
// (not absl::Hash, which is seeded per process): the ids' order is the order the uncertainty is
// summed in, and the same request must give the same bits in every process.
enum class ContributionKind { kGemm, kFusedAttention, kLayer, kElementwise };

uint64_t Mix(uint64_t h, uint64_t v) {  // splitmix64's finaliser over h ^ v
  uint64_t z = h ^ (v + 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// FNV-1a over 64-bit words (one multiply each: this runs for every GEMM of every candidate),
// then one full mix.
uint64_t ContributionId(ContributionKind kind, const GemmKey& k = {}, int64_t a = 0,
                        int64_t b = 0) {
  uint64_t h = 0xCBF29CE484222325ULL ^ static_cast<uint64_t>(kind);
  for (int64_t v : {k.shape.m, k.shape.n, k.shape.k, k.shape.batch,
                    static_cast<int64_t>(k.layout), static_cast<int64_t>(k.dtype), a, b}) {
    h = (h ^ static_cast<uint64_t>(v)) * 0x100000001B3ULL;
  }
  return Mix(h, 0);
}
uint64_t ContributionId(ContributionKind kind, absl::string_view text) {
  uint64_t h = Mix(0, static_cast<uint64_t>(kind));
  for (unsigned char c : text) h = Mix(h, c);
  return h;
}

// Sorts by id and sums the times of equal ids (the same GEMM run by several layers or passes
// keeps the last σ, as they are the same measurement or prediction). A step has a few dozen terms:
// an insertion sort keeps equal ids in order as std::stable_sort does, without the buffer that
// one allocates for every candidate.
void MergeContributions(std::vector<Contribution>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    const Contribution x = v[i];
    size_t j = i;
    for (; j > 0 && x.id < v[j - 1].id; --j) v[j] = v[j - 1];
    v[j] = x;
  }
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && v[out - 1].id == v[i].id) {
      v[out - 1].time_s += v[i].time_s;
      v[out - 1].relative_sigma = v[i].relative_sigma;
    } else {
      v[out++] = v[i];
    }
  }
  v.resize(out);
}

// One GEMM's (or fused attention's) time in a candidate's step, what it is known to, and the id
// its contribution carries.
struct GemmCost {
  double time_s = 0;
  double sigma = 0;        // relative: the re-run spread when measured, else the model's band
  double rerun_sigma = 0;  // relative, for the step's own uncertainty (GEMMs only)
  bool measured = false;
  uint64_t id = 0;
};

GemmCost CostOf(const Gemm& g, const GpuSpec& gpu, ScoreCache& times) {
  GemmCost c;
  if (g.fused_attention) {
    const GemmPrediction& p = times.FusedAttention(gpu, g);
    c.time_s = p.time_s;
    c.sigma = SigmaOfBand(p.band_p10, p.band_p90);
    c.id = ContributionId(ContributionKind::kFusedAttention, g.key(),
                          static_cast<int>(g.pass) + 4 * g.window, g.kv_batch);
    return c;
  }
  const GemmTime& gt = times.Get(g.key());
  c.time_s = gt.time_s;
  c.measured = gt.measured;
  c.rerun_sigma = RerunSigma(gt.relative_spread);
  c.sigma = gt.measured ? c.rerun_sigma : SigmaOfBand(gt.band_p10, gt.band_p90);
  c.id = ContributionId(ContributionKind::kGemm, g.key());
  return c;
}

// What a step's spread and measured share sum over: the variance of the rerun noise, the seconds
// measured, and whether every GEMM priced on its own was measured.
struct StepTally {
  double var = 0;
  double measured_s = 0;
  bool all_measured = true;
};

// Prices the step's GEMMs into `c` (gemm_time_s, time_by_gemm, contributions) and `tally`. With
// `layer_measured`, the layer's GEMMs (all but the logits) are in the measured layer's time: named
// in time_by_gemm only.
void AddGemmCosts(const std::vector<Gemm>& gemms, const GpuSpec& gpu, ScoreCache& times,
                  bool layer_measured, CandidateScore& c, StepTally& tally) {
  c.contributions.reserve(gemms.size() + 2);
  c.time_by_gemm.reserve(gemms.size());
  for (const Gemm& g : gemms) {
    const bool in_layer = g.name != kLogits;
    const GemmCost cost = CostOf(g, gpu, times);
    const double step = cost.time_s * static_cast<double>(g.count);
    if (!(layer_measured && in_layer) && !g.fused_attention) {
      tally.all_measured &= cost.measured;
      const double s = step * cost.rerun_sigma;
      tally.var += s * s;
    }
    // The reasons compare GEMMs by name, measured whole or not (a handful of names: a list).
    auto named = std::find_if(c.time_by_gemm.begin(), c.time_by_gemm.end(),
                              [&](const auto& x) { return x.first == g.name; });
    if (named == c.time_by_gemm.end()) {
      c.time_by_gemm.emplace_back(g.name, step);
    } else {
      named->second += step;
    }
    if (layer_measured && in_layer) continue;  // measured whole, in the layer's time
    c.gemm_time_s += step;
    if (cost.measured) tally.measured_s += step;
    c.contributions.push_back({cost.id, step, cost.sigma});
  }
}

}  // namespace

CandidateScore ScoreCandidate(const ModelSpec& spec, const GpuSpec& gpu, ScoreCache& times,
                              int64_t base_params, const LayerTimeFn& layers) {
  CandidateScore c;
  c.spec = spec;
  c.params = CountParams(spec);
  c.param_change = static_cast<double>(BudgetParams(spec, c.params) - base_params) /
                   static_cast<double>(base_params);
  const std::vector<Gemm> gemms = BuildGemms(spec);
  // The whole layer, when it was measured: it replaces the per-layer GEMMs and estimates.
  std::optional<LayerTime> layer;
  std::optional<LayerKey> layer_key;
  if (layers) {
    if (auto k = MakeLayerKey(LayerKind::kTransformerLayer, spec); k.ok()) {
      layer_key = *k;
      layer = layers(*k);
    }
  }
  StepTally tally;
  AddGemmCosts(gemms, gpu, times, layer.has_value(), c, tally);
  const ElementwiseEstimate e = EstimateElementwise(spec, gpu);
  if (layer) {
    const double layers_s = layer->time_s * static_cast<double>(spec.num_layers);
    c.elementwise_time_s = e.loss_time_s;
    c.contributions.push_back(
        {ContributionId(ContributionKind::kLayer, LayerKeyString(*layer_key)), layers_s,
         RerunSigma(layer->relative_spread)});
    const double s = layers_s * RerunSigma(layer->relative_spread);
    tally.var += s * s;
    tally.measured_s += layers_s;
    c.step_time_s = c.gemm_time_s + layers_s + c.elementwise_time_s;
    c.layer_share = layers_s / c.step_time_s;
  } else {
    c.elementwise_time_s = e.time_s;
    c.step_time_s = c.gemm_time_s + c.elementwise_time_s;
  }
  c.contributions.push_back({ContributionId(ContributionKind::kElementwise),
                             c.elementwise_time_s, kElementwiseRelativeSigma});
  MergeContributions(c.contributions);
  c.step_sigma_s = std::sqrt(tally.var);
  c.all_measured = tally.all_measured;
  c.measured_share = c.step_time_s > 0 ? tally.measured_s / c.step_time_s : 0;
  const FlopCounts f = CountFlops(spec, gemms);
  c.tokens_per_s_per_gpu = static_cast<double>(f.tokens_per_step) / c.step_time_s /
                           static_cast<double>(spec.tensor_parallel);
  // Recommend's merit (Merit) counts each kernel's products whole, a fused attention's whole
  // s × s product among them, as it always has: FlopCounts::step_flops now counts only the blocks
  // a causal mask leaves, which would move candidates that change attention's share.
  double counted = 0;
  for (const Gemm& g : gemms) counted += g.step_flops();
  c.mfu = counted / (c.step_time_s * gpu.PeakFlops(spec.dtype));
  return c;
}

namespace {

// Relative standard deviation of time(base)/time(c): errors of the GEMMs both run cancel.
double RatioSigma(const CandidateScore& base, const CandidateScore& c) {
  // Both lists are sorted by id: walk them together.
  const std::vector<Contribution>& bs = base.contributions;
  const std::vector<Contribution>& cs = c.contributions;
  double var = 0;
  size_t i = 0, j = 0;
  while (i < bs.size() || j < cs.size()) {
    const bool take_b = i < bs.size() && (j == cs.size() || bs[i].id <= cs[j].id);
    const bool take_c = j < cs.size() && (i == bs.size() || cs[j].id <= bs[i].id);
    const double wb = take_b ? bs[i].time_s / base.step_time_s : 0;
    const double wc = take_c ? cs[j].time_s / c.step_time_s : 0;
    const double sigma =
        std::max(take_b ? bs[i].relative_sigma : 0, take_c ? cs[j].relative_sigma : 0);
    var += sigma * sigma * (wb - wc) * (wb - wc);
    i += take_b;
    j += take_c;
  }
  return std::sqrt(var);
}

}  // namespace

double RatioUncertainty(const CandidateScore& a, const CandidateScore& b) {
  return RatioSigma(a, b);
}

}  // namespace wavecrest
