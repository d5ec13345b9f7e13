// Knobs, constraints and the rules every candidate meets (tensor-parallel degrees, head dims,
// the parameter budget), and the ranking of scored candidates. Generation, scoring and the
// reasons live beside it (core/recommend_detail.h lists the files).
#include "core/recommend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/rules.h"
#include "core/sample_policies.h"
#include "core/recommend_detail.h"
#include "core/timing_stats.h"

namespace wavecrest {

using namespace recommend_detail;  // NOLINT(build/namespaces): this file's own helpers

absl::string_view KnobName(Knob k) {
  switch (k) {
    case Knob::kHeads:
      return "heads";
    case Knob::kKvHeads:
      return "kv_heads";
    case Knob::kHidden:
      return "hidden";
    case Knob::kFfn:
      return "ffn";
    case Knob::kVocab:
      return "vocab";
    case Knob::kLayers:
      return "layers";
    case Knob::kExperts:
      return "experts";
  }
  return "?";
}

ModelSpec WithLayers(ModelSpec s, int64_t layers) {
  if (s.sliding_window_layers > 0 && s.num_layers > 0) {
    // The model's own pattern of local layers (Gemma 3: five in six; GPT-OSS: every other one),
    // or failing one the same share.
    s.sliding_window_layers = LocalLayersFor(layers, s.num_layers, s.sliding_window_layers);
  }
  s.num_layers = layers;
  if (s.first_dense_layers >= layers) s.first_dense_layers = std::max<int64_t>(0, layers - 1);
  return s;
}

int64_t BudgetParams(const ModelSpec& spec, const ParamCounts& counts) {
  return spec.num_experts > 0 ? counts.active_params : counts.total_params;
}

absl::StatusOr<Knob> ParseKnob(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  for (Knob k : {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab,
                 Knob::kLayers, Knob::kExperts}) {
    if (n == KnobName(k)) return k;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("vary: unknown knob \"", name,
                   "\"; allowed: heads, kv_heads, hidden, ffn, vocab, layers, experts"));
}

std::vector<FieldViolation> ValidateConstraints(const RecommendConstraints& c) {
  std::vector<FieldViolation> v;
  if (!(c.param_tolerance >= 0 && c.param_tolerance <= 0.5)) {
    v.push_back({"param_tolerance", absl::StrCat("must be in [0, 0.5]; got ", c.param_tolerance)});
  }
  for (size_t i = 0; i < c.allowed_head_dims.size(); ++i) {
    const int64_t d = c.allowed_head_dims[i];
    if (d < 8 || d > 1024) {
      v.push_back({absl::StrCat("allowed_head_dims[", i, "]"),
                   absl::StrCat("must be in [8, 1024]; got ", d)});
    }
  }
  if (c.min_heads < 0 || c.min_heads > kMaxHeads) {
    v.push_back({"min_heads", absl::StrCat("must be in [0, ", kMaxHeads, "]; got ", c.min_heads)});
  }
  if (c.max_heads < 0 || c.max_heads > kMaxHeads) {
    v.push_back({"max_heads", absl::StrCat("must be in [0, ", kMaxHeads, "]; got ", c.max_heads)});
  } else if (c.max_heads > 0 && c.min_heads > c.max_heads) {
    v.push_back({"max_heads", absl::StrCat("must be at least min_heads (", c.min_heads, "); got ",
                                           c.max_heads)});
  }
  if (c.max_candidates < 1 || c.max_candidates > kMaxMaxCandidates) {
    v.push_back({"max_candidates",
                 absl::StrCat("must be in [1, ", kMaxMaxCandidates, "]; got ", c.max_candidates)});
  }
  if (c.head_dim_multiple < 1 || c.head_dim_multiple > 256) {
    v.push_back({"head_dim_multiple",
                 absl::StrCat("must be in [1, 256] (0 = 16); got ", c.head_dim_multiple)});
  }
  if (c.top < 1 || c.top > 1000) {
    v.push_back({"top", absl::StrCat("must be in [1, 1000]; got ", c.top)});
  }
  if (c.keep_layers && c.vary.count(Knob::kLayers)) {
    v.push_back({"keep_layers", "conflicts with vary containing layers"});
  }
  return v;
}

std::set<Knob> EffectiveKnobs(const RecommendConstraints& c) {
  std::set<Knob> k = c.vary;
  if (k.empty()) {
    k = {Knob::kHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab};
    if (!c.keep_layers) k.insert(Knob::kLayers);
  }
  return k;
}

namespace {


// The first rule `s` breaks for the degrees `tps`, or kRefusalRules when it is legal. A
// dimension `s` keeps unchanged from `base` is never held against it: a candidate is not
// stricter than the model as given.
RefusalRule IllegalFor(const ModelSpec& s, const ModelSpec& base, const std::vector<int64_t>& tps,
                       bool replication) {
  for (int64_t t : tps) {
    if (s.num_attention_heads != base.num_attention_heads && s.num_attention_heads % t != 0) {
      return kHeadsByTp;
    }
    if (s.num_kv_heads != base.num_kv_heads && !ValidTpForKv(s.num_kv_heads, t, replication)) {
      return kKvHeadsByTp;
    }
    if (s.hidden_size != base.hidden_size && s.hidden_size % t != 0) return kHiddenByTp;
    if (s.ffn_hidden_size != base.ffn_hidden_size && s.ffn_hidden_size % t != 0) return kFfnByTp;
  }
  if (s.num_layers != base.num_layers &&
      s.num_layers % std::max<int64_t>(1, s.pipeline_parallel) != 0) {
    return kLayersByPp;
  }
  return kRefusalRules;
}

// The dimensions of `s` that do not shard over `t` ("12 heads do not divide by 8").
std::vector<std::string> TpBreaks(const ModelSpec& s, int64_t t, bool replication) {
  std::vector<std::string> out;
  if (s.num_attention_heads % t != 0) {
    out.push_back(absl::StrCat(s.num_attention_heads, " heads do not divide by ", t));
  }
  if (!ValidTpForKv(s.num_kv_heads, t, replication)) {
    out.push_back(absl::StrCat(s.num_kv_heads, " KV heads neither divide by ", t,
                               replication ? " nor divide it" : ""));
  }
  if (s.hidden_size % t != 0) {
    out.push_back(absl::StrCat("hidden size ", s.hidden_size, " does not divide by ", t));
  }
  if (s.ffn_hidden_size % t != 0) {
    out.push_back(absl::StrCat("MLP width ", s.ffn_hidden_size, " does not divide by ", t));
  }
  return out;
}

}  // namespace

TpRequirement RequiredTp(const ModelSpec& base, const RecommendConstraints& c) {
  TpRequirement r;
  const bool replication = !c.kv_divisible;
  auto add = [&](int64_t x) {
    if (x >= 1 && std::find(r.degrees.begin(), r.degrees.end(), x) == r.degrees.end()) {
      r.degrees.push_back(x);
    }
  };
  add(base.tensor_parallel);
  r.from_options = !c.tensor_parallel_options.empty();
  if (r.from_options) {
    for (int64_t x : c.tensor_parallel_options) add(x);
    r.source = "tensor_parallel_options";
  } else {
    // The defaults the baseline meets itself: a model is never held to more than it does.
    for (int64_t x : kDefaultTpOptions) {
      if (TpBreaks(base, x, replication).empty()) add(x);
    }
    r.source = absl::StrCat("the degrees of ", absl::StrJoin(kDefaultTpOptions, ", "),
                            " the baseline supports");
  }
  std::sort(r.degrees.begin(), r.degrees.end());
  for (int64_t t : r.degrees) {
    for (std::string& b : TpBreaks(base, t, replication)) r.baseline_breaks.push_back(std::move(b));
  }
  return r;
}

std::vector<int64_t> TpDegrees(const ModelSpec& base, const RecommendConstraints& c) {
  return RequiredTp(base, c).degrees;
}

namespace recommend_detail {

// A mixture of experts is budgeted by its active parameters; its total may move by this many
// times the tolerance (a wider expert with fewer layers keeps the active count, not the total).
constexpr double kMoeTotalToleranceFactor = 3;

Refusal RefusalInfo(RefusalRule r, const std::string& tps) {
  switch (r) {
    case kHeadDimRange:
      return {"head_dim_range", 0, "head options",
              absl::StrCat("head dim (h/a) outside [", kDefaultMinHeadDim, ", ",
                           kDefaultMaxHeadDim, "] or not in allowed_head_dims"),
              "allowed_head_dims (--allowed-head-dims)"};
    case kHeadDimMultiple:
      return {"head_dim_multiple", 0, "head options", "head dim (h/a) not a multiple of the "
              "head_dim_multiple (default 16)", "head_dim_multiple (--head-dim-multiple 1)"};
    case kHeadCount:
      return {"head_count", 0, "head options", "heads outside [min_heads, max_heads]",
              "min_heads, max_heads (--min-heads, --max-heads)"};
    case kHeadsByTp:
      return {"heads_divisible_by_tp", 0, "head options",
              absl::StrCat("heads not divisible by every tensor-parallel degree (", tps, ")"),
              "tensor_parallel_options (--tp-options)"};
    case kKvHeadsByTp:
      return {"kv_heads_divisible_by_tp", 0, "shapes",
              absl::StrCat("KV heads neither divisible by every tensor-parallel degree (", tps,
                           ") nor dividing it (replicated)"),
              "tensor_parallel_options (--tp-options)"};
    case kHiddenByTp:
      return {"hidden_divisible_by_tp", 0, "shapes",
              absl::StrCat("hidden size not divisible by every tensor-parallel degree (", tps,
                           ")"),
              "tensor_parallel_options (--tp-options)"};
    case kFfnByTp:
      return {"ffn_divisible_by_tp", 0, "shapes",
              absl::StrCat("MLP width not divisible by every tensor-parallel degree (", tps, ")"),
              "tensor_parallel_options (--tp-options)"};
    case kLayersByPp:
      return {"layers_divisible_by_pp", 0, "shapes",
              "layers not divisible by the pipeline stages", "model.pipeline_parallel (--pp)"};
    case kParamBudget:
      return {"param_tolerance", 0, "shapes",
              "parameter count outside the tolerance of the baseline's",
              "param_tolerance (--param-tolerance)"};
    case kRefusalRules:
      break;
  }
  return {};
}

RefusalRule CheckShape(const ModelSpec& n, const ModelSpec& base, const ParamCounts& base_counts,
                       const std::vector<int64_t>& tps, const RecommendConstraints& c,
                       int64_t* params) {
  if (const RefusalRule r = IllegalFor(n, base, tps, !c.kv_divisible); r != kRefusalRules) {
    return r;
  }
  const ParamCounts counts = CountParams(n);
  *params = BudgetParams(n, counts);
  const int64_t budget = BudgetParams(base, base_counts);
  auto within = [](int64_t p, int64_t of, double tolerance) {
    return std::abs(static_cast<double>(p - of) / static_cast<double>(of)) <= tolerance + 1e-12;
  };
  if (!within(*params, budget, c.param_tolerance)) return kParamBudget;
  if (n.num_experts > 0 && !within(counts.total_params, base_counts.total_params,
                                   kMoeTotalToleranceFactor * c.param_tolerance)) {
    return kParamBudget;
  }
  return kRefusalRules;
}

}  // namespace recommend_detail

CandidateRules::CandidateRules(const ModelSpec& base, const RecommendConstraints& c)
    : base_(base),
      c_(c),
      tps_(TpDegrees(base, c)),
      base_params_(BudgetParams(base, CountParams(base))) {}

int64_t CandidateRules::tp_lcm() const {
  int64_t l = 1;
  for (int64_t t : tps_) l = std::lcm(l, t);
  return l;
}

std::optional<ModelSpec> CandidateRules::Admit(const ModelSpec& s) const {
  absl::StatusOr<ModelSpec> n = NormalizeSpec(s);
  int64_t params = 0;
  if (!n.ok() || CheckShape(*n, base_, CountParams(base_), tps_, c_, &params) != kRefusalRules) {
    return std::nullopt;
  }
  return *std::move(n);
}

double Merit(const CandidateScore& c) {
  return c.spec.workload == Workload::kDecode ? c.tokens_per_s_per_gpu * (1 + c.param_change)
                                              : c.mfu;
}

std::string MeritBasis(const ModelSpec& spec) {
  return spec.workload == Workload::kDecode
             ? "decode tokens/s per GPU at equal parameters (tokens/s × params / baseline params)"
             : "MFU (model FLOP/s per GPU at equal work)";
}

bool TunedHeadDim(const ModelSpec& spec) {
  const int64_t d = Derive(spec).head_dim;
  return d == 64 || d == 128;
}

namespace {

// Among the winners [first, last) (ranked, each beats the baseline): when #1's head dim is not
// one the kernels are tuned for and a winner with such a head dim is within #1's uncertainty
// (their speed-up bands overlap), that winner goes first and says why. The model cannot tell
// them apart; 64 and 128 are what FlashAttention and cuDNN are tuned for, what checkpoints and
// inference engines expect, and what every tensor-parallel degree keeps whole.
void PreferTunedHeadDim(std::vector<CandidateScore>::iterator first,
                        std::vector<CandidateScore>::iterator last) {
  if (first == last || TunedHeadDim(first->spec)) return;
  const double floor = first->speedup - first->speedup_uncertainty;
  for (auto it = std::next(first); it != last; ++it) {
    if (!TunedHeadDim(it->spec) || it->speedup + it->speedup_uncertainty < floor) continue;
    it->preferred_head_dim = true;
    std::rotate(first, it, std::next(it));
    return;
  }
}

}  // namespace

namespace {

// The candidates' indices best first, each shape once (its best entry; the baseline always):
// merit, then the smaller parameter change, then fewer fields changed, then the shape.
std::vector<size_t> RankedIndices(const std::vector<CandidateScore>& scores,
                                  const CandidateScore* base) {
  // What the order compares, once per candidate; then the indices are sorted, not the scores.
  struct Order {
    double merit;
    double abs_change;
    int changed;  // fields changed against the baseline: among equal efficiency, fewer wins
    SpecKey key;
  };
  const SpecKey b = KeyOf(base ? base->spec : ModelSpec());
  std::vector<Order> order;
  order.reserve(scores.size());
  for (const CandidateScore& s : scores) {
    const SpecKey a = KeyOf(s.spec);
    const int changed =
        base ? (std::get<0>(a) != std::get<0>(b)) + (std::get<1>(a) != std::get<1>(b)) +
                   (std::get<2>(a) != std::get<2>(b)) + (std::get<4>(a) != std::get<4>(b)) +
                   (std::get<5>(a) != std::get<5>(b)) + (std::get<6>(a) != std::get<6>(b))
             : 0;
    order.push_back({Merit(s), std::abs(s.param_change), changed, a});
  }
  std::vector<size_t> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t i, size_t j) {
    const Order& x = order[i];
    const Order& y = order[j];
    const double tol = 1e-9 * std::max(x.merit, y.merit);
    if (std::abs(x.merit - y.merit) > tol) return x.merit > y.merit;
    if (x.abs_change != y.abs_change) return x.abs_change < y.abs_change;
    if (x.changed != y.changed) return x.changed < y.changed;
    return x.key < y.key;
  });
  // No shape twice: the first (best) entry of each shape stays; the baseline always stays.
  absl::flat_hash_set<SpecKey> seen;
  seen.reserve(scores.size());
  std::vector<size_t> kept;
  kept.reserve(scores.size());
  for (size_t i : idx) {
    if (seen.insert(order[i].key).second || scores[i].baseline) kept.push_back(i);
  }
  return kept;
}

// Puts scores into the order `kept` names and drops the rest, in place, by swaps (a new vector
// of every candidate cost more, in fresh pages, than the ranking itself): at[p] is the original
// index of the candidate now at p.
void ApplyOrder(std::vector<CandidateScore>& scores, const std::vector<size_t>& kept) {
  std::vector<size_t> at(scores.size()), where(scores.size());
  std::iota(at.begin(), at.end(), 0);
  std::iota(where.begin(), where.end(), 0);
  for (size_t p = 0; p < kept.size(); ++p) {
    const size_t from = where[kept[p]];
    if (from == p) continue;
    std::swap(scores[p], scores[from]);
    where[at[p]] = from;
    at[from] = at[p];
    at[p] = kept[p];
    where[kept[p]] = p;
  }
  scores.erase(scores.begin() + static_cast<std::ptrdiff_t>(kept.size()), scores.end());
}

}  // namespace

void RankCandidates(std::vector<CandidateScore>& scores, size_t explain) {
  const CandidateScore* base = nullptr;
  for (const auto& s : scores) {
    if (s.baseline) base = &s;
  }
  const CandidateScore base_copy = base ? *base : CandidateScore();
  std::vector<size_t> kept = RankedIndices(scores, base);
  size_t beating = 0;
  if (base) {
    for (size_t i : kept) {
      CandidateScore& s = scores[i];
      s.speedup = Merit(base_copy) > 0 ? Merit(s) / Merit(base_copy) : 1;
      // Measured spreads and predicted bands both sit in the contributions, per distinct GEMM.
      s.speedup_uncertainty = s.baseline ? 0 : s.speedup * RatioUncertainty(base_copy, s);
    }
    // Those that beat the baseline, the baseline, the rest (each group keeps its order).
    auto beats = [&](size_t i) { return Beats(scores[i]); };
    std::stable_partition(kept.begin(), kept.end(), beats);
    const auto first_other = std::find_if_not(kept.begin(), kept.end(), beats);
    beating = static_cast<size_t>(first_other - kept.begin());
    const auto b_it =
        std::find_if(first_other, kept.end(), [&](size_t i) { return scores[i].baseline; });
    if (b_it != kept.end()) std::rotate(first_other, b_it, b_it + 1);
  }
  ApplyOrder(scores, kept);
  if (!base) return;
  const auto first_other = scores.begin() + static_cast<std::ptrdiff_t>(beating);
  PreferTunedHeadDim(scores.begin(), first_other);
  // Reasons for what will be shown: words cost more than numbers.
  for (size_t i = 0; i < std::min(explain, scores.size()); ++i) {
    if (scores[i].baseline) continue;
    scores[i].reasons = Explain(base_copy, scores[i]);
    if (scores[i].preferred_head_dim) {
      scores[i].reasons.push_back(absl::StrFormat(
          "ranked first among winners the model cannot tell apart: head dim %d is one attention "
          "kernels are tuned for (64, 128); the faster-looking #2 (%.3fx ± %.3f) is within its "
          "uncertainty",
          Derive(scores[i].spec).head_dim, scores[1].speedup, scores[1].speedup_uncertainty));
    }
  }
}

bool Beats(const CandidateScore& c) {
  return !c.baseline && c.speedup - 1 > std::max(c.speedup_uncertainty, kMinWorthwhileGain);
}

}  // namespace wavecrest
