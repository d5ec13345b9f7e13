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
  }
  return "?";
}

ModelSpec WithLayers(ModelSpec s, int64_t layers) {
  if (s.sliding_window_layers > 0 && s.num_layers > 0) {
    // The same share of local layers (Gemma 3: five in six), at least one.
    s.sliding_window_layers = std::max<int64_t>(
        1, (s.sliding_window_layers * layers + s.num_layers / 2) / s.num_layers);
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

int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

using SpecKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
SpecKey KeyOf(const ModelSpec& s) {
  return {s.hidden_size, s.num_attention_heads, s.num_kv_heads,
          s.head_dim,    s.ffn_hidden_size,     s.vocab_size,
          s.num_layers,  s.num_experts,         s.experts_per_token};
}

// KV heads shard over t ranks: divisible by t, or (with replication) fewer than t and dividing it.
bool ValidTpForKv(int64_t kv, int64_t t, bool replication) {
  return kv % t == 0 || (replication && t % kv == 0);
}

// The rules of GenerateCandidates, in the order they are checked and reported.
enum RefusalRule {
  kHeadDimRange,
  kHeadDimMultiple,
  kHeadCount,
  kHeadsByTp,
  kKvHeadsByTp,
  kHiddenByTp,
  kFfnByTp,
  kLayersByPp,
  kParamBudget,
  kRefusalRules
};
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

namespace {

// A mixture of experts is budgeted by its active parameters; its total may move by this many
// times the tolerance (a wider expert with fewer layers keeps the active count, not the total).
constexpr double kMoeTotalToleranceFactor = 3;

// The first rule a normalized shape breaks as a candidate for `base` (kRefusalRules: none); its
// budget parameters in `params`.
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

}  // namespace

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

namespace {

// Keeps the `cap` candidates with the smallest parameter change (ties by shape), the baseline
// always first, without holding more than `cap` specs at once.
class BoundedCandidates {
 public:
  BoundedCandidates(int64_t base_params, size_t cap) : base_params_(base_params), cap_(cap) {
    // Room for the first few thousand without moving them as the vectors grow.
    specs_.reserve(std::min<size_t>(cap, 4096));
    heap_.reserve(std::min<size_t>(cap, 4096));
  }

  // A shape already kept is not added twice. One evicted earlier cannot come back: the worst kept
  // entry only gets better, and the evicted one was worse than it. The heap orders small entries;
  // the specs stay in their slots.
  void Add(const SpecKey& key, ModelSpec s, int64_t params) {
    Entry e{std::abs(static_cast<double>(params - base_params_)), key, 0};
    if (heap_.size() < cap_) {
      if (!kept_.insert(key).second) return;
      e.slot = specs_.size();
      specs_.push_back(std::move(s));
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), Less);
    } else if (!heap_.empty() && Less(e, heap_.front())) {
      if (!kept_.insert(key).second) return;
      std::pop_heap(heap_.begin(), heap_.end(), Less);
      kept_.erase(heap_.back().key);
      e.slot = heap_.back().slot;
      specs_[e.slot] = std::move(s);
      heap_.back() = e;
      std::push_heap(heap_.begin(), heap_.end(), Less);
    }
  }

  std::vector<ModelSpec> Take(ModelSpec baseline) {
    std::sort(heap_.begin(), heap_.end(), Less);
    std::vector<ModelSpec> out;
    out.reserve(heap_.size() + 1);
    out.push_back(std::move(baseline));
    for (const Entry& e : heap_) out.push_back(std::move(specs_[e.slot]));
    return out;
  }

 private:
  struct Entry {
    double change;
    SpecKey key;
    size_t slot;  // in specs_
  };
  static bool Less(const Entry& a, const Entry& b) {
    return a.change != b.change ? a.change < b.change : a.key < b.key;
  }
  int64_t base_params_;
  size_t cap_;
  std::vector<Entry> heap_;  // max-heap by (change, key): the worst kept candidate on top
  std::vector<ModelSpec> specs_;
  absl::flat_hash_set<SpecKey> kept_;  // the keys in heap_
};

// The options of each knob for one hidden size.
struct KnobOptions {
  std::vector<std::pair<int64_t, int64_t>> heads;  // (a, d)
  std::vector<int64_t> ffns;
  std::vector<int64_t> vocabs;
};

// Expert granularity at equal active parameters: (E·m, k·m, f/m) for m in 2, 4, 8 and
// (E/m, k/m, f·m) for m in 2, 4, each legal; the width is rounded to 64 (and every t).
struct ExpertOption {
  int64_t experts, per_token, num, den;  // width scaled by num/den
};

// Walks the neighbourhood of one baseline: every knob's options, each shape checked, the nearest
// kept, what the rules refused counted.
class CandidateGenerator {
 public:
  CandidateGenerator(const ModelSpec& base, const RecommendConstraints& c)
      : base_(base),
        c_(c),
        // A mixture of experts keeps its experts and top-k (they change what the model learns)
        // unless the caller asks for vary experts.
        knobs_(EffectiveKnobs(c)),
        tps_(TpDegrees(base, c)),
        t_(base.tensor_parallel),
        pp_(std::max<int64_t>(1, base.pipeline_parallel)),
        h0_(base.hidden_size),
        base_params_(BudgetParams(base, CountParams(base))),
        explicit_head_dim_(base.head_dim * base.num_attention_heads != base.hidden_size),
        layers_move_(Has(Knob::kLayers) && !c.keep_layers) {
    for (int64_t t : tps_) t_all_ = std::lcm(t_all_, t);
  }

  absl::StatusOr<std::vector<ModelSpec>> Run(int64_t* generated, const std::function<bool()>& stop,
                                             std::vector<Refusal>* refusals) {
    *generated = 0;
    const std::vector<int64_t> hiddens = Hiddens();
    const std::vector<ExpertOption> experts = ExpertOptions();
    if (absl::Status s = CheckSearchSpace(hiddens, experts); !s.ok()) return s;
    BoundedCandidates kept(base_params_,
                           static_cast<size_t>(std::max<int64_t>(0, c_.max_candidates - 1)));
    absl::StatusOr<ModelSpec> base_n = NormalizeSpec(base_);
    if (!base_n.ok()) return base_n.status();
    const SpecKey base_key = KeyOf(*base_n);
    const ParamCounts base_counts = CountParams(*base_n);
    auto consider = [&](const ModelSpec& s) {
      ++*generated;
      absl::StatusOr<ModelSpec> n = NormalizeSpec(s);
      if (!n.ok()) return;
      int64_t p = 0;
      if (const RefusalRule r = CheckShape(*n, *base_n, base_counts, tps_, c_, &p);
          r != kRefusalRules) {
        ++refused_[r];
        return;
      }
      if (const SpecKey key = KeyOf(*n); key != base_key) kept.Add(key, *std::move(n), p);
    };
    for (int64_t h : hiddens) {
      const KnobOptions o = OptionsFor(h, true);
      for (auto [a, d] : o.heads) {
        for (int64_t kv : KvOptions(a)) {
          if (stop && stop()) return absl::CancelledError("the call was cancelled");
          for (int64_t f0 : o.ffns) {
            for (const ExpertOption& e : experts) {
              for (int64_t v : o.vocabs) {
                const ModelSpec s = Shape(h, a, d, kv, ExpertWidth(f0, e), v, e);
                for (int64_t L : LayerCounts(s)) consider(WithLayers(s, L));
              }
            }
          }
        }
      }
    }
    if (refusals != nullptr) ReportRefusals(refusals);
    return kept.Take(*base_n);
  }

 private:
  bool Has(Knob k) const { return knobs_.count(k) > 0; }

  // hidden_size: the baseline, and multiples of 64 (and of every t) in a window.
  std::vector<int64_t> Hiddens() const {
    std::vector<int64_t> hiddens = {h0_};
    if (!Has(Knob::kHidden)) return hiddens;
    const double window = layers_move_ ? kHiddenWindow : c_.param_tolerance / 2 + 0.01;
    const int64_t lo = static_cast<int64_t>(std::floor(h0_ * (1 - window)));
    const int64_t hi = static_cast<int64_t>(std::ceil(h0_ * (1 + window)));
    const int64_t step = std::lcm<int64_t>(64, t_all_);
    for (int64_t h = RoundUp(std::max<int64_t>(lo, step), step); h <= hi; h += step) {
      if (h != h0_ && h <= kMaxHiddenSize) hiddens.push_back(h);
    }
    return hiddens;
  }

  // Whether head dim d (a = h / d heads) passes the head rules; `count`: add what they refuse.
  bool HeadAllowed(int64_t h, int64_t d, bool count) {
    const int64_t a = h / d;
    auto refuse = [&](RefusalRule r) {
      if (count) ++refused_[r];
      return false;
    };
    if (h == h0_ && a == base_.num_attention_heads) return true;
    // The baseline's own head dim is always allowed (Gemma's 256, say), its head count too.
    if (d == base_.head_dim) {
      // as the baseline has it
    } else if (c_.allowed_head_dims.empty()) {
      if (d < kDefaultMinHeadDim || d > kDefaultMaxHeadDim) {
        if (d >= kDefaultMinHeadDim / 2 && d <= 2 * kDefaultMaxHeadDim) refuse(kHeadDimRange);
        return false;
      }
      if (d % std::max<int64_t>(1, c_.head_dim_multiple) != 0) return refuse(kHeadDimMultiple);
    } else if (std::find(c_.allowed_head_dims.begin(), c_.allowed_head_dims.end(), d) ==
               c_.allowed_head_dims.end()) {
      return refuse(kHeadDimRange);
    }
    if (a < std::max<int64_t>(1, c_.min_heads) || (c_.max_heads > 0 && a > c_.max_heads)) {
      return refuse(kHeadCount);
    }
    if (a != base_.num_attention_heads && a % t_all_ != 0) return refuse(kHeadsByTp);
    return true;
  }

  std::vector<std::pair<int64_t, int64_t>> HeadOptions(int64_t h, bool count) {
    std::vector<std::pair<int64_t, int64_t>> heads;
    if (explicit_head_dim_) {
      heads.push_back({base_.num_attention_heads, base_.head_dim});
    } else if (Has(Knob::kHeads)) {
      for (int64_t d = 8; d <= std::min<int64_t>(h, 1024); ++d) {
        if (h % d == 0 && HeadAllowed(h, d, count)) heads.push_back({h / d, d});
      }
    } else if (h % base_.num_attention_heads == 0) {
      heads.push_back({base_.num_attention_heads, h / base_.num_attention_heads});
    }
    return heads;
  }

  // MLP width targets scale with h.
  std::vector<int64_t> FfnOptions(int64_t h) const {
    std::vector<int64_t> ffns;
    auto add = [&](int64_t f) {
      if (std::find(ffns.begin(), ffns.end(), f) == ffns.end()) ffns.push_back(f);
    };
    const double f_target = static_cast<double>(base_.ffn_hidden_size) * h / h0_;
    if (h == h0_) ffns.push_back(base_.ffn_hidden_size);
    const int64_t f_round = static_cast<int64_t>(std::llround(f_target / t_all_)) * t_all_;
    if (f_round != base_.ffn_hidden_size || h != h0_) ffns.push_back(f_round);
    if (!Has(Knob::kFfn)) return ffns;
    const double span = base_.mlp == Mlp::kSwiglu ? 0.03 : 0.01;
    const int64_t step = std::lcm<int64_t>(64, t_all_);
    for (int64_t f = RoundUp(static_cast<int64_t>(f_target * (1 - span)), step);
         f <= static_cast<int64_t>(f_target * (1 + span)); f += step) {
      add(f);
    }
    if (base_.num_experts > 0) {
      // An expert's width is a small GEMM dimension (768 in Qwen3-30B-A3B): a 3% span holds no
      // other multiple of 64. Two steps either way, the layers keeping the active parameters
      // (and the total within kMoeTotalToleranceFactor × the tolerance).
      const int64_t near = RoundUp(static_cast<int64_t>(std::llround(f_target)), step);
      for (int64_t f : {near - 2 * step, near - step, near, near + step, near + 2 * step}) {
        if (f > 0) add(f);
      }
    }
    return ffns;
  }

  std::vector<int64_t> VocabOptions() const {
    std::vector<int64_t> vocabs = {base_.vocab_size};
    if (!Has(Knob::kVocab)) return vocabs;
    for (int64_t m : {64 * t_, 128 * t_}) {
      const int64_t v = RoundUp(base_.vocab_size, m);
      if (std::find(vocabs.begin(), vocabs.end(), v) == vocabs.end()) vocabs.push_back(v);
    }
    return vocabs;
  }

  // `count`: add what the rules refuse to refused_ (once per hidden size, while generating).
  KnobOptions OptionsFor(int64_t h, bool count) {
    KnobOptions o;
    o.heads = HeadOptions(h, count);
    o.ffns = FfnOptions(h);
    o.vocabs = VocabOptions();
    return o;
  }

  std::vector<int64_t> KvOptions(int64_t a) const {
    std::vector<int64_t> kvs;
    const int64_t a0 = base_.num_attention_heads, kv0 = base_.num_kv_heads;
    if (Has(Knob::kKvHeads)) {
      for (int64_t kv = 1; kv <= a; ++kv) {
        if (a % kv != 0) continue;
        bool ok = true;
        for (int64_t x : tps_) ok &= kv == kv0 || ValidTpForKv(kv, x, !c_.kv_divisible);
        if (ok) kvs.push_back(kv);
      }
    } else if (kv0 == a0) {
      kvs.push_back(a);
    } else if (a0 % kv0 == 0 && a % (a0 / kv0) == 0) {
      kvs.push_back(a / (a0 / kv0));  // same group size
    } else if (a % kv0 == 0) {
      kvs.push_back(kv0);
    }
    return kvs;
  }

  std::vector<ExpertOption> ExpertOptions() const {
    std::vector<ExpertOption> out = {{base_.num_experts, base_.experts_per_token, 1, 1}};
    if (!Has(Knob::kExperts) || base_.num_experts == 0) return out;
    for (int64_t m : {2, 4, 8}) {
      if (base_.num_experts * m <= kMaxExperts) {
        out.push_back({base_.num_experts * m, base_.experts_per_token * m, 1, m});
      }
    }
    for (int64_t m : {2, 4}) {
      if (base_.experts_per_token % m == 0 && base_.num_experts % m == 0) {
        out.push_back({base_.num_experts / m, base_.experts_per_token / m, m, 1});
      }
    }
    return out;
  }

  int64_t ExpertWidth(int64_t f0, const ExpertOption& e) const {
    if (e.num == e.den) return f0;
    return RoundUp(std::max<int64_t>(1, f0 * e.num / e.den), std::lcm<int64_t>(64, t_all_));
  }

  // Refuses a search space too large to examine, before any work, naming what makes it large.
  absl::Status CheckSearchSpace(const std::vector<int64_t>& hiddens,
                                const std::vector<ExpertOption>& experts) {
    int64_t space = 0;
    for (int64_t h : hiddens) {
      const KnobOptions o = OptionsFor(h, false);
      int64_t per_h = 0;
      for (auto [a, d] : o.heads) per_h += static_cast<int64_t>(KvOptions(a).size());
      space += per_h * static_cast<int64_t>(o.ffns.size() * o.vocabs.size()) *
               static_cast<int64_t>(experts.size()) * (layers_move_ ? 2 : 1);
      if (space > kMaxExaminedShapes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the search space exceeds ", kMaxExaminedShapes,
            " shapes; narrow it (fewer knobs in vary, fewer allowed_head_dims, a smaller "
            "param_tolerance, or vary kv_heads separately)"));
      }
    }
    return absl::OkStatus();
  }

  ModelSpec Shape(int64_t h, int64_t a, int64_t d, int64_t kv, int64_t f, int64_t v,
                  const ExpertOption& e) const {
    ModelSpec s = base_;
    s.hidden_size = h;
    s.num_attention_heads = a;
    s.head_dim = d;
    s.num_kv_heads = kv;
    s.ffn_hidden_size = f;
    // Shared experts that are whole experts (DeepSeek's n_shared_experts, Llama 4's one,
    // Qwen1.5-MoE's four) stay whole experts: as many, of the new width.
    const int64_t shared = base_.shared_expert_ffn_hidden_size;
    if (base_.num_experts > 0 && shared > 0 && shared % base_.ffn_hidden_size == 0) {
      s.shared_expert_ffn_hidden_size = shared / base_.ffn_hidden_size * f;
    }
    s.vocab_size = v;
    s.num_experts = e.experts;
    s.experts_per_token = e.per_token;
    return s;
  }

  // The baseline's layer count, and when layers move the counts that keep the budget: solve
  // budget(L) = base_params for L with everything else fixed, L a multiple of the pipeline
  // stages. The budget (an MoE's active parameters) is linear in L over whole periods of a
  // dense/MoE mix: its slope from two lengths a period apart.
  std::vector<int64_t> LayerCounts(const ModelSpec& s) const {
    std::vector<int64_t> layers = {base_.num_layers};
    if (!layers_move_) return layers;
    const int64_t period = pp_ * std::max<int64_t>(1, base_.moe_layer_interval);
    const int64_t l0 = std::max(base_.num_layers, pp_ + base_.first_dense_layers);
    auto budget_at = [&](int64_t L) {
      const ModelSpec at = WithLayers(s, L);
      return static_cast<double>(BudgetParams(at, CountParams(at)));
    };
    const double b0 = budget_at(l0);
    const double per_layer = (budget_at(l0 + period) - b0) / static_cast<double>(period);
    const double exact =
        (l0 + (static_cast<double>(base_params_) - b0) / per_layer) / static_cast<double>(pp_);
    for (int64_t stages :
         {static_cast<int64_t>(std::floor(exact)), static_cast<int64_t>(std::ceil(exact))}) {
      const int64_t L = stages * pp_;
      if (L >= 1 && L <= kMaxLayers && std::find(layers.begin(), layers.end(), L) == layers.end()) {
        layers.push_back(L);
      }
    }
    return layers;
  }

  void ReportRefusals(std::vector<Refusal>* refusals) const {
    refusals->clear();
    const std::string tp_text = absl::StrJoin(tps_, ", ");
    for (int r = 0; r < kRefusalRules; ++r) {
      if (refused_[r] == 0) continue;
      Refusal x = RefusalInfo(static_cast<RefusalRule>(r), tp_text);
      x.count = refused_[r];
      refusals->push_back(std::move(x));
    }
  }

  const ModelSpec& base_;
  const RecommendConstraints& c_;
  const std::set<Knob> knobs_;
  const std::vector<int64_t> tps_;
  const int64_t t_, pp_, h0_, base_params_;
  const bool explicit_head_dim_, layers_move_;
  int64_t t_all_ = 1;  // every dimension sharded by t must divide by each degree asked
  std::array<int64_t, kRefusalRules> refused_{};
};

}  // namespace

absl::StatusOr<std::vector<ModelSpec>> GenerateCandidates(const ModelSpec& base,
                                                          const RecommendConstraints& c,
                                                          int64_t* generated,
                                                          const std::function<bool()>& stop,
                                                          std::vector<Refusal>* refusals) {
  return CandidateGenerator(base, c).Run(generated, stop, refusals);
}

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
// keeps the last σ, as they are the same measurement or prediction).
void MergeContributions(std::vector<Contribution>& v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const Contribution& a, const Contribution& b) { return a.id < b.id; });
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
  double var = 0;
  double measured_s = 0;
  bool all_measured = true;
  c.contributions.reserve(gemms.size() + 2);
  for (const Gemm& g : gemms) {
    const bool in_layer = g.name != kLogits;
    const GemmCost cost = CostOf(g, gpu, times);
    const double step = cost.time_s * static_cast<double>(g.count);
    if (!(layer && in_layer) && !g.fused_attention) {
      all_measured &= cost.measured;
      const double s = step * cost.rerun_sigma;
      var += s * s;
    }
    // The reasons compare GEMMs by name, measured whole or not (a handful of names: a list).
    auto named = std::find_if(c.time_by_gemm.begin(), c.time_by_gemm.end(),
                              [&](const auto& x) { return x.first == g.name; });
    if (named == c.time_by_gemm.end()) {
      c.time_by_gemm.emplace_back(g.name, step);
    } else {
      named->second += step;
    }
    if (layer && in_layer) continue;  // measured whole, in the layer's time
    c.gemm_time_s += step;
    if (cost.measured) measured_s += step;
    c.contributions.push_back({cost.id, step, cost.sigma});
  }
  std::sort(c.time_by_gemm.begin(), c.time_by_gemm.end());
  const ElementwiseEstimate e = EstimateElementwise(spec, gpu);
  if (layer) {
    const double layers_s = layer->time_s * static_cast<double>(spec.num_layers);
    c.elementwise_time_s = e.loss_time_s;
    c.contributions.push_back(
        {ContributionId(ContributionKind::kLayer, LayerKeyString(*layer_key)), layers_s,
         RerunSigma(layer->relative_spread)});
    const double s = layers_s * RerunSigma(layer->relative_spread);
    var += s * s;
    measured_s += layers_s;
    c.step_time_s = c.gemm_time_s + layers_s + c.elementwise_time_s;
    c.layer_share = layers_s / c.step_time_s;
  } else {
    c.elementwise_time_s = e.time_s;
    c.step_time_s = c.gemm_time_s + c.elementwise_time_s;
  }
  c.contributions.push_back({ContributionId(ContributionKind::kElementwise),
                             c.elementwise_time_s, kElementwiseRelativeSigma});
  MergeContributions(c.contributions);
  c.step_sigma_s = std::sqrt(var);
  c.all_measured = all_measured;
  c.measured_share = c.step_time_s > 0 ? measured_s / c.step_time_s : 0;
  const FlopCounts f = CountFlops(spec, gemms);
  c.tokens_per_s_per_gpu = static_cast<double>(f.tokens_per_step) / c.step_time_s /
                           static_cast<double>(spec.tensor_parallel);
  c.mfu = f.step_flops / (c.step_time_s * gpu.PeakFlops(spec.dtype));
  return c;
}

namespace {

std::string Arrow(absl::string_view what, int64_t from, int64_t to) {
  return absl::StrCat(what, " ", from, " → ", to);
}

}  // namespace

namespace {

// What each change alone accounts for (MinimizeCandidates): the candidate over itself without
// it, appended to the reason that names the change (each starts with the change's words).
void AnnotateGains(const CandidateScore& c, std::vector<std::string>& reasons) {
  for (std::string& line : reasons) {
    for (const CandidateScore::KnobGain& g : c.knob_gains) {
      if (!absl::StartsWith(line, g.change)) continue;
      absl::StrAppend(&line, g.gain > 0
                                 ? absl::StrFormat(": this change %.3f× ± %.3f", g.gain,
                                                   g.gain * g.sigma)
                                 : ": kept with the others (alone it breaks the parameter "
                                   "budget or sharding)");
      break;
    }
  }
}

// One line per knob the candidate changes, each naming the paper's rule it serves.
std::vector<std::string> ChangeLines(const ModelSpec& b, const ModelSpec& s) {
  std::vector<std::string> r;
  const int64_t t = s.tensor_parallel;
  if (s.hidden_size != b.hidden_size) {
    std::string x = Arrow("h", b.hidden_size, s.hidden_size);
    if (LargestPow2Factor(s.hidden_size / t) >= 64 && LargestPow2Factor(b.hidden_size / t) < 64) {
      absl::StrAppend(&x, " (rule 3: h/t divisible by 64)");
    }
    r.push_back(x);
  }
  if (s.num_attention_heads != b.num_attention_heads || s.head_dim != b.head_dim) {
    std::string x = absl::StrCat("a ", b.num_attention_heads, " → ", s.num_attention_heads,
                                 ": h/a ", b.head_dim, " → ", s.head_dim);
    std::vector<std::string> why;
    if (LargestPow2Factor(s.head_dim) >= 64 && LargestPow2Factor(b.head_dim) < 64) {
      why.push_back("rule 3: h/a divisible by 64");
    }
    if (s.head_dim > b.head_dim) why.push_back("rule 7: fewer, larger heads");
    if (!why.empty()) absl::StrAppend(&x, " (", absl::StrJoin(why, "; "), ")");
    r.push_back(x);
  }
  const bool both_mha = b.num_kv_heads == b.num_attention_heads &&
                        s.num_kv_heads == s.num_attention_heads;  // KV heads follow the heads
  if (s.num_kv_heads != b.num_kv_heads && !both_mha) {
    r.push_back(Arrow("a_kv", b.num_kv_heads, s.num_kv_heads));
  }
  if (s.num_experts != b.num_experts || s.experts_per_token != b.experts_per_token) {
    r.push_back(
        absl::StrCat("experts ", b.num_experts, " → ", s.num_experts, ", top-", b.experts_per_token,
                     " → top-", s.experts_per_token,
                     s.num_experts > b.num_experts ? " (finer experts" : " (coarser experts",
                     ", about the same active parameters)"));
  }
  if (s.ffn_hidden_size != b.ffn_hidden_size) {
    std::string x =
        Arrow(s.num_experts > 0 ? "expert width f" : "f", b.ffn_hidden_size, s.ffn_hidden_size);
    const int64_t p1 = LargestPow2Factor(s.ffn_hidden_size / t);
    const int64_t p0 = LargestPow2Factor(b.ffn_hidden_size / t);
    if (p1 > p0) {
      absl::StrAppend(&x, " (rule 6: f/t a multiple of ", p1, ", was ", p0, ")");
    }
    r.push_back(x);
  }
  if (s.vocab_size != b.vocab_size) {
    r.push_back(absl::StrCat(Arrow("v", b.vocab_size, s.vocab_size),
                             " (rule 1: padded to a multiple of ", LargestPow2Factor(s.vocab_size),
                             ")"));
  }
  if (s.num_layers != b.num_layers) {
    r.push_back(absl::StrCat(Arrow("L", b.num_layers, s.num_layers),
                             " to stay within the parameter budget"));
  }
  return r;
}

}  // namespace

std::vector<std::string> Explain(const CandidateScore& base, const CandidateScore& c) {
  const ModelSpec& s = c.spec;
  std::vector<std::string> r = ChangeLines(base.spec, s);
  AnnotateGains(c, r);
  // Which GEMMs gained or lost (step time of each GEMM name, all passes).
  std::map<std::string, double> bt(base.time_by_gemm.begin(), base.time_by_gemm.end());
  std::vector<std::string> gains;
  for (const auto& [name, time] : c.time_by_gemm) {
    auto it = bt.find(name);
    if (it == bt.end() || time <= 0) continue;
    const double ratio = it->second / time;
    if (std::abs(ratio - 1) < 0.02) continue;
    gains.push_back(absl::StrFormat("%s %.2f×", name, ratio));
  }
  if (!gains.empty()) {
    r.push_back(absl::StrCat(absl::StrJoin(gains, ", "),
                             base.all_measured && c.all_measured ? " (measured)" : " (predicted)"));
  }
  if (std::abs(c.param_change) >= 0.0005) {
    if (s.workload == Workload::kDecode) {
      r.push_back(absl::StrFormat(
          "%+.1f%% parameters; the speed-up compares decode tokens/s (%.0f vs %.0f per GPU)",
          100 * c.param_change, c.tokens_per_s_per_gpu, base.tokens_per_s_per_gpu));
    } else {
      r.push_back(absl::StrFormat(
          "%+.1f%% parameters; the speed-up compares model FLOP/s at equal work (MFU %.1f%% vs "
          "%.1f%%)",
          100 * c.param_change, 100 * c.mfu, 100 * base.mfu));
    }
  }
  for (const RuleViolation& v : CheckRules(s, BuildGemms(s))) {
    r.push_back(absl::StrCat("still breaks rule ", v.paper_rule, ": ", v.message));
  }
  const double ew = base.elementwise_time_s > 0 && c.elementwise_time_s > 0
                        ? base.elementwise_time_s / c.elementwise_time_s
                        : 1;
  if (std::abs(ew - 1) >= 0.02) {
    r.push_back(absl::StrFormat("elementwise %.2f× (estimated)", ew));
  }
  return r;
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
      s.speedup_uncertainty = s.baseline ? 0 : s.speedup * RatioSigma(base_copy, s);
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
