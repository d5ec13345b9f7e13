// Knobs, constraints and the rules every candidate meets (tensor-parallel degrees, head dims,
// the parameter budget, what it holds of the baseline). Generation, scoring, the ranking and the
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
#include "core/memory.h"
#include "core/rules.h"
#include "core/sample_policies.h"
#include "core/recommend_detail.h"
#include "core/timing_stats.h"

namespace wavecrest {

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
    case Knob::kKvGroup:
      return "kv_group";
    case Knob::kKvCache:
      return "kv_cache";
    case Knob::kHeadDim:
      return "head_dim";
    case Knob::kTotalParams:
      return "total_params";
  }
  return "?";
}

bool ReleasesHold(Knob k) {
  return k == Knob::kKvGroup || k == Knob::kKvCache || k == Knob::kHeadDim ||
         k == Knob::kTotalParams;
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
  std::string n = absl::AsciiStrToLower(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (Knob k : {Knob::kHeads, Knob::kKvHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab,
                 Knob::kLayers, Knob::kExperts, Knob::kKvGroup, Knob::kKvCache, Knob::kHeadDim,
                 Knob::kTotalParams}) {
    if (n == KnobName(k)) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "vary: unknown knob \"", name,
      "\"; allowed: heads, kv_heads, hidden, ffn, vocab, layers, experts (shapes that move) and "
      "kv_group, kv_cache, head_dim, total_params (what a candidate otherwise holds)"));
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
  std::set<Knob> k;
  for (Knob x : c.vary) {
    if (!ReleasesHold(x)) k.insert(x);
  }
  if (k.empty()) {
    k = {Knob::kHeads, Knob::kHidden, Knob::kFfn, Knob::kVocab};
    if (!c.keep_layers) k.insert(Knob::kLayers);
  }
  return k;
}

namespace {

// The dimensions of `s` that do not shard over `t` ("12 heads do not divide by 8").
std::vector<std::string> TpBreaks(const ModelSpec& s, int64_t t, bool replication) {
  std::vector<std::string> out;
  if (s.num_attention_heads % t != 0) {
    out.push_back(absl::StrCat(s.num_attention_heads, " heads do not divide by ", t));
  }
  if (!recommend_detail::ValidTpForKv(s.num_kv_heads, t, replication)) {
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

int64_t HeadDimFloor(const ModelSpec& base, const RecommendConstraints& c) {
  if (c.vary.count(Knob::kHeadDim)) return 0;
  const int64_t d = base.head_dim > 0 ? base.head_dim
                    : base.num_attention_heads > 0 ? base.hidden_size / base.num_attention_heads
                                                   : kMinHeldHeadDim;
  return std::min(kMinHeldHeadDim, d);
}

std::vector<HeldProperty> HeldProperties(const ModelSpec& spec, const RecommendConstraints& c) {
  const absl::StatusOr<ModelSpec> n = NormalizeSpec(spec);
  const ModelSpec& base = n.ok() ? *n : spec;
  std::vector<HeldProperty> out;
  auto add = [&](Knob k, std::string what) {
    out.push_back({std::string(KnobName(k)), std::move(what), c.vary.count(k) > 0});
  };
  const int64_t kv = std::max<int64_t>(1, base.num_kv_heads);
  if (base.kv_lora_rank == 0) {
    const int64_t group = base.num_attention_heads / kv;
    add(Knob::kKvGroup, group == 1 ? std::string("1 query head per KV head (multi-head attention)")
                                   : absl::StrCat(group, " query heads per KV head"));
  }
  add(Knob::kKvCache, absl::StrFormat("KV cache %.1f KiB per token, within %.0f%%",
                                      KvCacheBytesPerToken(base) / 1024,
                                      100 * kKvCacheTolerance));
  const int64_t floor = HeadDimFloor(base, RecommendConstraints());
  add(Knob::kHeadDim, absl::StrCat("head dim at least ", floor,
                                   floor < kMinHeldHeadDim ? " (the baseline's)" : ""));
  if (base.num_experts > 0) {
    add(Knob::kExperts, absl::StrCat(base.num_experts, " experts, top-", base.experts_per_token));
    add(Knob::kTotalParams,
        absl::StrFormat("total parameters within %.0f%% (active within the parameter tolerance)",
                        100 * kMoeTotalTolerance));
  }
  std::vector<std::string> pattern;
  const int64_t local = base.sliding_window == 0 ? 0
                        : base.sliding_window_layers == 0 ? base.num_layers
                                                          : base.sliding_window_layers;
  if (local > 0 && local < base.num_layers) {
    pattern.push_back(absl::StrCat(local, " of ", base.num_layers, " layers local"));
  }
  if (base.num_experts > 0 && (base.first_dense_layers > 0 || base.moe_layer_interval > 1)) {
    pattern.push_back(absl::StrCat(base.first_dense_layers, " dense first, then every ",
                                   std::max<int64_t>(1, base.moe_layer_interval),
                                   " layer(s) MoE"));
  }
  if (!pattern.empty()) {
    out.push_back({"layer_pattern",
                   absl::StrCat(absl::StrJoin(pattern, "; "), ", the same share at any L"), false});
  }
  return out;
}

std::vector<int64_t> LegalTp(const ModelSpec& s, const std::vector<int64_t>& degrees,
                             bool kv_divisible) {
  std::vector<int64_t> out;
  for (int64_t t : degrees) {
    if (TpBreaks(s, t, !kv_divisible).empty()) out.push_back(t);
  }
  return out;
}

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
    // The defaults the baseline meets itself: a model is never held to more than it does; of
    // them, those its run would use when the caller knows them.
    for (int64_t x : kDefaultTpOptions) {
      const bool run = c.run_tp.empty() ||
                       std::find(c.run_tp.begin(), c.run_tp.end(), x) != c.run_tp.end();
      if (run && TpBreaks(base, x, replication).empty()) add(x);
    }
    r.source = !c.run_tp_source.empty()
                   ? c.run_tp_source
                   : absl::StrCat("the degrees of ", absl::StrJoin(kDefaultTpOptions, ", "),
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

// A mixture of experts is budgeted by its active parameters; with total_params released its
// total may move by this many times the tolerance (a wider expert with fewer layers keeps the
// active count, not the total).
constexpr double kMoeTotalToleranceFactor = 3;

namespace {

// The refusals of a head option: the head dim's range, multiple and floor, the head count, heads
// over the tensor-parallel degrees (`tps`). The empty Refusal for another rule.
Refusal HeadRefusalInfo(RefusalRule r, const std::string& tps) {
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
    case kHeadDimFloor:
      return {"head_dim_floor", 0, "head options",
              absl::StrCat("head dim below ", kMinHeldHeadDim,
                           " (or the baseline's, when smaller): attention of another model"),
              "vary head_dim (--vary head_dim)"};
    default:
      break;
  }
  return {};
}

// The refusals of a shape: widths over the tensor-parallel degrees (`tps`), layers over the
// stages, what must stay the baseline's (KV group and cache, parameters). The empty Refusal for
// another rule.
Refusal ShapeRefusalInfo(RefusalRule r, const std::string& tps) {
  switch (r) {
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
    case kKvGroup:
      return {"kv_group", 0, "shapes",
              "query heads per KV head other than the baseline's (another model to serve)",
              "vary kv_group (--vary kv_group)"};
    case kKvCache:
      return {"kv_cache", 0, "shapes",
              absl::StrFormat("KV-cache bytes per token more than %.0f%% from the baseline's",
                              100 * kKvCacheTolerance),
              "vary kv_cache (--vary kv_cache)"};
    case kParamBudget:
      return {"param_tolerance", 0, "shapes",
              "parameter count outside the tolerance of the baseline's",
              "param_tolerance (--param-tolerance)"};
    case kMoeTotal:
      return {"total_params", 0, "shapes",
              absl::StrFormat("a mixture of experts' total parameters more than %.0f%% from the "
                              "baseline's",
                              100 * kMoeTotalTolerance),
              "vary total_params (--vary total_params)"};
    default:
      break;
  }
  return {};
}

}  // namespace

Refusal RefusalInfo(RefusalRule r, const std::string& tps) {
  switch (r) {
    case kHeadDimRange:
    case kHeadDimMultiple:
    case kHeadCount:
    case kHeadsByTp:
    case kHeadDimFloor:
      return HeadRefusalInfo(r, tps);
    case kKvHeadsByTp:
    case kHiddenByTp:
    case kFfnByTp:
    case kLayersByPp:
    case kKvGroup:
    case kKvCache:
    case kParamBudget:
    case kMoeTotal:
      return ShapeRefusalInfo(r, tps);
    case kRefusalRules:
      break;
  }
  return {};
}

BaseFacts::BaseFacts(const ModelSpec& base, const RecommendConstraints& c)
    : counts(CountParams(base)),
      head_dim_floor(HeadDimFloor(base, c)),
      hold_group(!c.vary.count(Knob::kKvGroup)),
      hold_cache(!c.vary.count(Knob::kKvCache)),
      hold_total(!c.vary.count(Knob::kTotalParams)),
      kv_bytes(KvCacheBytesPerToken(base)) {}

RefusalRule CheckHeld(const ModelSpec& n, const ModelSpec& base, const BaseFacts& f) {
  if (n.head_dim != base.head_dim && n.head_dim < f.head_dim_floor) return kHeadDimFloor;
  if (f.hold_group && n.kv_lora_rank == 0 &&
      n.num_attention_heads * base.num_kv_heads != base.num_attention_heads * n.num_kv_heads) {
    return kKvGroup;
  }
  if (f.hold_cache && f.kv_bytes > 0 &&
      std::abs(KvCacheBytesPerToken(n) / f.kv_bytes - 1) > kKvCacheTolerance + 1e-12) {
    return kKvCache;
  }
  return kRefusalRules;
}

namespace {

// The first rule `s` breaks for the degrees `tps`, or kRefusalRules when it is legal. Unless
// `strict`, a dimension `s` keeps unchanged from `base` is never held against it: a candidate is
// not stricter than the model as given (the default degrees are ones the baseline meets). Strict
// (the request named the degrees): every dimension is, so that every candidate meets them.
RefusalRule IllegalFor(const ModelSpec& s, const ModelSpec& base, const std::vector<int64_t>& tps,
                       bool replication, bool strict) {
  auto moved = [strict](int64_t a, int64_t b) { return strict || a != b; };
  for (int64_t t : tps) {
    if (moved(s.num_attention_heads, base.num_attention_heads) && s.num_attention_heads % t != 0) {
      return kHeadsByTp;
    }
    if (moved(s.num_kv_heads, base.num_kv_heads) && !ValidTpForKv(s.num_kv_heads, t, replication)) {
      return kKvHeadsByTp;
    }
    if (moved(s.hidden_size, base.hidden_size) && s.hidden_size % t != 0) return kHiddenByTp;
    if (moved(s.ffn_hidden_size, base.ffn_hidden_size) && s.ffn_hidden_size % t != 0) {
      return kFfnByTp;
    }
  }
  if (s.num_layers != base.num_layers &&
      s.num_layers % std::max<int64_t>(1, s.pipeline_parallel) != 0) {
    return kLayersByPp;
  }
  return kRefusalRules;
}

}  // namespace

RefusalRule CheckShape(const ModelSpec& n, const ModelSpec& base, const BaseFacts& f,
                       const std::vector<int64_t>& tps, const RecommendConstraints& c,
                       int64_t* params) {
  if (const RefusalRule r = IllegalFor(n, base, tps, !c.kv_divisible, StrictTp(c));
      r != kRefusalRules) {
    return r;
  }
  if (const RefusalRule r = CheckHeld(n, base, f); r != kRefusalRules) return r;
  const ParamCounts counts = CountParams(n);
  *params = BudgetParams(n, counts);
  const ParamCounts& base_counts = f.counts;
  const int64_t budget = BudgetParams(base, base_counts);
  auto within = [](double p, double of, double tolerance) {
    return std::abs((p - of) / of) <= tolerance + 1e-12;
  };
  if (!within(*params, budget, c.param_tolerance)) return kParamBudget;
  if (n.num_experts > 0) {
    const bool released = !f.hold_total;
    const double tolerance =
        released ? kMoeTotalToleranceFactor * c.param_tolerance : kMoeTotalTolerance;
    if (!within(counts.total_params, base_counts.total_params, tolerance)) {
      return released ? kParamBudget : kMoeTotal;
    }
  }
  return kRefusalRules;
}

}  // namespace recommend_detail

CandidateRules::CandidateRules(const ModelSpec& base, const RecommendConstraints& c)
    : base_(base),
      c_(c),
      tps_(TpDegrees(base, c)),
      facts_(std::make_shared<const recommend_detail::BaseFacts>(base, c)) {}

int64_t CandidateRules::tp_lcm() const {
  int64_t l = 1;
  for (int64_t t : tps_) l = std::lcm(l, t);
  return l;
}

std::optional<ModelSpec> CandidateRules::Admit(const ModelSpec& s) const {
  absl::StatusOr<ModelSpec> n = NormalizeSpec(s);
  int64_t params = 0;
  if (!n.ok() || recommend_detail::CheckShape(*n, base_, *facts_, tps_, c_, &params) !=
                     recommend_detail::kRefusalRules) {
    return std::nullopt;
  }
  return *std::move(n);
}

}  // namespace wavecrest
