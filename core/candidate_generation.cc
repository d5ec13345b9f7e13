// The neighbourhood of a baseline: every knob's options (hidden sizes, heads and head dims, KV
// heads, MLP and expert widths, vocabulary padding, layer counts), each shape checked against the
// constraints, the nearest kept (core/recommend.h, GenerateCandidates).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/recommend.h"
#include "core/recommend_detail.h"
#include "core/rules.h"
#include "core/sample_policies.h"
#include "core/timing_stats.h"

namespace wavecrest {
// The generator sits among the recommendation's own helpers: it names their refusal rules and
// checks (core/recommend_detail.h) as its own.
namespace recommend_detail {
namespace {

// Keeps the keys of the `cap` candidates with the smallest parameter change (ties by shape). A
// shape is a function of its key (CandidateGenerator::Rebuild), so a wide search holds keys, not
// specs: a spec is five times the size, and most shapes kept early are dropped later. Entries
// gather up to twice the cap and are then cut to the cap (nth_element), which costs less than a
// heap that evicts one at a time; the cut's worst entry bars every later shape that is no nearer.
class BoundedCandidates {
 public:
  BoundedCandidates(int64_t base_params, size_t cap) : base_params_(base_params), cap_(cap) {
    // Room for the first few thousand without moving them as the vector grows.
    entries_.reserve(std::min<size_t>(2 * cap, 8192));
  }

  // Whether Add would keep a shape of `params` and `key` now (it may be kept already).
  bool Admits(const SpecKey& key, int64_t params) const {
    return cap_ > 0 && (!bar_ || Less{}(EntryOf(key, params), *bar_));
  }

  // A shape already kept is not added twice. One dropped earlier cannot come back: it was no
  // nearer than the bar, which only gets nearer.
  void Add(const SpecKey& key, int64_t params) {
    if (!Admits(key, params) || !kept_.insert(key).second) return;
    entries_.push_back(EntryOf(key, params));
    if (entries_.size() >= 2 * cap_) Cut();
  }

  // The keys kept, the nearest first.
  std::vector<SpecKey> Take() {
    Cut();
    std::sort(entries_.begin(), entries_.end(), Less{});
    std::vector<SpecKey> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.push_back(e.key);
    return out;
  }

 private:
  struct Entry {
    double change;
    SpecKey key;
  };
  struct Less {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.change != b.change ? a.change < b.change : a.key < b.key;
    }
  };
  Entry EntryOf(const SpecKey& key, int64_t params) const {
    return {std::abs(static_cast<double>(params - base_params_)), key};
  }
  // Keeps the cap nearest entries; the farthest of them becomes the bar.
  void Cut() {
    if (entries_.size() <= cap_) return;
    const auto nth = entries_.begin() + static_cast<std::ptrdiff_t>(cap_ - 1);
    std::nth_element(entries_.begin(), nth, entries_.end(), Less{});
    bar_ = *nth;
    for (auto it = nth + 1; it != entries_.end(); ++it) kept_.erase(it->key);
    entries_.erase(nth + 1, entries_.end());
  }
  int64_t base_params_;
  size_t cap_;
  std::vector<Entry> entries_;
  std::optional<Entry> bar_;           // the farthest entry kept at the last cut
  absl::flat_hash_set<SpecKey> kept_;  // the keys in entries_
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

// The knobs that move and the held properties released.
std::set<Knob> WithReleases(const RecommendConstraints& c) {
  std::set<Knob> k = EffectiveKnobs(c);
  for (Knob x : c.vary) {
    if (ReleasesHold(x)) k.insert(x);
  }
  return k;
}

// The divisors of w in [lo, hi], ascending: pairs up to √w (a wide search asks for every hidden
// size's, and a division per value of [lo, hi] cost 7% of a Recommend).
std::vector<int64_t> Divisors(int64_t w, int64_t lo, int64_t hi) {
  std::vector<int64_t> small, large;
  for (int64_t i = 1; i * i <= w; ++i) {
    if (w % i != 0) continue;
    small.push_back(i);
    if (i != w / i) large.push_back(w / i);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  std::vector<int64_t> out;
  for (int64_t d : small) {
    if (d >= lo && d <= hi) out.push_back(d);
  }
  return out;
}

// Whether the dimensions a candidate moves are all positive (CheckShape's arithmetic needs no
// more; Validate checks the rest).
bool PositiveDims(const ModelSpec& s) {
  return s.hidden_size > 0 && s.num_attention_heads > 0 && s.head_dim > 0 && s.num_kv_heads > 0 &&
         s.ffn_hidden_size > 0 && s.vocab_size > 0 && s.num_layers > 0 &&
         s.tensor_parallel > 0 && s.pipeline_parallel > 0 && s.context_parallel > 0 &&
         s.expert_parallel > 0 && s.num_experts >= 0;
}

// Walks the neighbourhood of one baseline: every knob's options, each shape checked, the nearest
// kept, what the rules refused counted.
class CandidateGenerator {
 public:
  CandidateGenerator(const ModelSpec& base, const RecommendConstraints& c)
      : base_(base),
        c_(c),
        // A mixture of experts keeps its experts and top-k (they change what the model learns)
        // unless the caller asks for vary experts; the held properties it releases too.
        knobs_(WithReleases(c)),
        tps_(TpDegrees(base, c)),
        t_(base.tensor_parallel),
        pp_(std::max<int64_t>(1, base.pipeline_parallel)),
        h0_(base.hidden_size),
        base_params_(BudgetParams(base, CountParams(base))),
        explicit_head_dim_(base.head_dim * base.num_attention_heads != base.hidden_size),
        // A hybrid model's layers are its pattern: they stay.
        layers_move_(Has(Knob::kLayers) && !c.keep_layers && !IsHybrid(base)),
        strict_(StrictTp(c)),
        head_dim_floor_(HeadDimFloor(base, c)) {
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
    const BaseFacts facts(*base_n, c_);
    // A shape that fails Validate is dropped uncounted; one that breaks a rule is counted; the
    // rest go to `kept`. Validate is the dear part of a shape's checks and a wide search drops
    // nearly every shape for being farther from the budget than those kept, so a shape is
    // validated only when it would be counted or kept: the same answer and counts as validating
    // every shape first. The rules read only positive dimensions (they divide by none of the
    // fields a shape moves); a shape with one that is not is validated first.
    auto consider = [&](const ModelSpec& s) {
      ++*generated;
      ModelSpec n = WithDefaults(s);
      if (!PositiveDims(n) && !Validate(n).empty()) return;
      int64_t p = 0;
      if (const RefusalRule r = CheckShape(n, *base_n, facts, tps_, c_, &p); r != kRefusalRules) {
        if (Validate(n).empty()) ++refused_[r];
        return;
      }
      const SpecKey key = KeyOf(n);
      if (key == base_key || !kept.Admits(key, p) || !Validate(n).empty()) return;
      kept.Add(key, p);
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
    std::vector<ModelSpec> out = {*base_n};
    const std::vector<SpecKey> keys = kept.Take();
    out.reserve(keys.size() + 1);
    for (const SpecKey& key : keys) out.push_back(Rebuild(key));
    return out;
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

  // The attention width a·d at hidden size h: h itself, or for a model whose head dim is its own
  // (Gemma's 256 heads at h 3072, Mistral-Nemo's 128 at h 5120) the baseline's width at every h.
  int64_t AttentionWidth(int64_t h) const {
    return explicit_head_dim_ ? base_.num_attention_heads * base_.head_dim : h;
  }

  // Whether head dim d (a = w / d heads over the attention width w) passes the head rules;
  // `count`: add what they refuse.
  bool HeadAllowed(int64_t w, int64_t d, bool count) {
    const int64_t a = w / d;
    auto refuse = [&](RefusalRule r) {
      if (count) ++refused_[r];
      return false;
    };
    // The baseline's own heads, unless the degrees asked are strict (StrictTp) and they break one.
    if (w == base_.num_attention_heads * base_.head_dim && a == base_.num_attention_heads) {
      return !strict_ || a % t_all_ == 0 || refuse(kHeadsByTp);
    }
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
    if (d != base_.head_dim && d < head_dim_floor_) return refuse(kHeadDimFloor);
    if (a < std::max<int64_t>(1, c_.min_heads) || (c_.max_heads > 0 && a > c_.max_heads)) {
      return refuse(kHeadCount);
    }
    if ((strict_ || a != base_.num_attention_heads) && a % t_all_ != 0) return refuse(kHeadsByTp);
    return true;
  }

  // (a, d) over the attention width: every head dim the rules allow when heads vary, else the
  // baseline's head count.
  std::vector<std::pair<int64_t, int64_t>> HeadOptions(int64_t h, bool count) {
    std::vector<std::pair<int64_t, int64_t>> heads;
    const int64_t w = AttentionWidth(h);
    // Multi-head latent attention's head dim is its nope and rotary parts: its heads stay.
    if (Has(Knob::kHeads) && base_.kv_lora_rank == 0) {
      for (int64_t d : Divisors(w, 8, 1024)) {
        if (HeadAllowed(w, d, count)) heads.push_back({w / d, d});
      }
    } else if (w % base_.num_attention_heads == 0) {
      heads.push_back({base_.num_attention_heads, w / base_.num_attention_heads});
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
        for (int64_t x : tps_) {
          ok &= (!strict_ && kv == kv0) || ValidTpForKv(kv, x, !c_.kv_divisible);
        }
        if (ok) kvs.push_back(kv);
      }
    } else if (kv0 == a0) {
      kvs.push_back(a);
    } else {
      if (a0 % kv0 == 0 && a % (a0 / kv0) == 0) kvs.push_back(a / (a0 / kv0));  // same group
      // Released, the KV heads may also stay as many as they were at another head count.
      if (Has(Knob::kKvGroup) && a % kv0 == 0 && (kvs.empty() || kvs.back() != kv0)) {
        kvs.push_back(kv0);
      }
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
    // Group-limited routing keeps its groups where they still divide the experts (finer experts:
    // k grows with them, so M groups still hold a token's); otherwise the limit goes.
    if (s.expert_groups > 1 && s.num_experts % s.expert_groups != 0) {
      s.expert_groups = s.expert_groups_per_token = 0;
    }
    return s;
  }

  // The normalized shape `consider` was given for `key`: Shape and WithLayers read nothing else
  // (of an expert option, its experts and top-k; the width is the key's).
  ModelSpec Rebuild(const SpecKey& key) const {
    const auto [h, a, kv, d, f, v, layers, experts, per_token] = key;
    const ModelSpec s = Shape(h, a, d, kv, f, v, ExpertOption{experts, per_token, 1, 1});
    return WithDefaults(WithLayers(s, layers));
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
  const bool strict_;  // StrictTp: the baseline's own dimensions meet the degrees too
  const int64_t head_dim_floor_;  // HeadDimFloor: 0 when released
  int64_t t_all_ = 1;  // every dimension sharded by t must divide by each degree asked
  std::array<int64_t, kRefusalRules> refused_{};
};

}  // namespace
}  // namespace recommend_detail

absl::StatusOr<std::vector<ModelSpec>> GenerateCandidates(const ModelSpec& base,
                                                          const RecommendConstraints& c,
                                                          int64_t* generated,
                                                          const std::function<bool()>& stop,
                                                          std::vector<Refusal>* refusals) {
  return recommend_detail::CandidateGenerator(base, c).Run(generated, stop, refusals);
}

}  // namespace wavecrest
