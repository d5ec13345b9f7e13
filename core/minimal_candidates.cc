#include "core/minimal_candidates.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/recommend_detail.h"

namespace wavecrest {
namespace {

int64_t RoundTo(double x, int64_t m) {
  return std::max<int64_t>(m, static_cast<int64_t>(std::llround(x / static_cast<double>(m))) * m);
}

// The single changes a candidate may make, as bits of a mask.
enum Part : int { kVocab, kHidden, kHeadDim, kKvGroup, kOwnFfn, kLayers, kExperts, kParts };

// The candidate `c` with any set of its single changes against `b` undone: its shape rebuilt
// from the baseline's value of each undone part and its own of the rest (the head count from the
// attention width and the head dim, the KV heads from the group, an MLP width from the hidden
// size and the experts unless it moved on its own).
class Undoer {
 public:
  Undoer(const ModelSpec& b, const ModelSpec& c, int64_t tp_lcm)
      : b_(b), c_(c), tp_(tp_lcm), explicit_(b.num_attention_heads * b.head_dim != b.hidden_size) {
    auto set = [&](Part p, bool on) { changed_ |= on ? 1u << p : 0u; };
    set(kVocab, c.vocab_size != b.vocab_size);
    set(kHidden, c.hidden_size != b.hidden_size);
    set(kHeadDim, c.head_dim != b.head_dim);
    set(kKvGroup, Group(c) != Group(b));
    set(kOwnFfn, c.ffn_hidden_size != Ffn(c.hidden_size, c.num_experts));
    set(kLayers, c.num_layers != b.num_layers);
    set(kExperts, c.num_experts != b.num_experts || c.experts_per_token != b.experts_per_token);
  }

  uint32_t changed() const { return changed_; }

  std::string Words(Part p) const {
    switch (p) {
      case kVocab:
        return recommend_detail::Arrow("v", b_.vocab_size, c_.vocab_size);
      case kHidden:
        return recommend_detail::Arrow("h", b_.hidden_size, c_.hidden_size);
      case kHeadDim:
        return absl::StrCat("a ", b_.num_attention_heads, " → ", c_.num_attention_heads, ": h/a ",
                            b_.head_dim, " → ", c_.head_dim);
      case kKvGroup:
        return recommend_detail::Arrow("a_kv", b_.num_kv_heads, c_.num_kv_heads);
      case kOwnFfn:
        // A width kept while the hidden size moved is a change of its own too.
        return c_.ffn_hidden_size == b_.ffn_hidden_size
                   ? absl::StrCat(c_.num_experts > 0 ? "expert width f " : "f ", c_.ffn_hidden_size,
                                  " kept (not scaled with h to ",
                                  Ffn(c_.hidden_size, c_.num_experts), ")")
                   : recommend_detail::Arrow(c_.num_experts > 0 ? "expert width f" : "f",
                                             b_.ffn_hidden_size, c_.ffn_hidden_size);
      case kLayers:
        return recommend_detail::Arrow("L", b_.num_layers, c_.num_layers);
      case kExperts:
        return absl::StrCat("experts ", b_.num_experts, " → ", c_.num_experts, ", top-",
                            b_.experts_per_token, " → top-", c_.experts_per_token);
      case kParts:
        break;
    }
    return "";
  }

  // The shape with the parts in `undo` undone (not yet checked by the rules; a shape that cannot
  // exist has no heads, which the rules refuse).
  ModelSpec Undo(uint32_t undo) const {
    auto off = [&](Part p) { return (undo >> p & 1u) != 0; };
    ModelSpec w = c_;
    w.vocab_size = off(kVocab) ? b_.vocab_size : c_.vocab_size;
    w.hidden_size = off(kHidden) ? b_.hidden_size : c_.hidden_size;
    // The attention width follows the hidden size, unless the head dim is the model's own.
    const int64_t width = explicit_ ? c_.num_attention_heads * c_.head_dim : w.hidden_size;
    const int64_t d = off(kHeadDim) ? b_.head_dim : c_.head_dim;
    const int64_t group = off(kKvGroup) ? Group(b_) : Group(c_);
    if (d <= 0 || width % d != 0 || (width / d) % group != 0) {
      w.num_attention_heads = 0;
      return w;
    }
    w.head_dim = d;
    w.num_attention_heads = width / d;
    w.num_kv_heads = w.num_attention_heads / group;
    if (off(kExperts)) {
      w.num_experts = b_.num_experts;
      w.experts_per_token = b_.experts_per_token;
      w.expert_groups = b_.expert_groups;
      w.expert_groups_per_token = b_.expert_groups_per_token;
    }
    int64_t f = Ffn(w.hidden_size, w.num_experts);
    if ((changed_ >> kOwnFfn & 1u) && !off(kOwnFfn)) {
      f = off(kExperts) && c_.num_experts != b_.num_experts
              ? RoundTo(static_cast<double>(c_.ffn_hidden_size) * c_.num_experts / b_.num_experts,
                        std::lcm<int64_t>(64, tp_))
              : c_.ffn_hidden_size;
    }
    // Shared experts that are whole experts follow the expert width (as the generator makes them).
    if (c_.num_experts > 0 && c_.shared_expert_ffn_hidden_size > 0 && c_.ffn_hidden_size > 0 &&
        c_.shared_expert_ffn_hidden_size % c_.ffn_hidden_size == 0) {
      w.shared_expert_ffn_hidden_size = c_.shared_expert_ffn_hidden_size / c_.ffn_hidden_size * f;
    }
    w.ffn_hidden_size = f;
    if (off(kLayers)) {
      w.num_layers = b_.num_layers;
      w.sliding_window_layers = b_.sliding_window_layers;
      w.first_dense_layers = b_.first_dense_layers;
    }
    return w;
  }

 private:
  static int64_t Group(const ModelSpec& s) {
    return s.num_kv_heads > 0 && s.num_attention_heads % s.num_kv_heads == 0
               ? s.num_attention_heads / s.num_kv_heads
               : 1;
  }
  // The MLP width at hidden size h with `experts` experts when it did not move on its own: the
  // baseline's scaled with h (rounded to the sharding, as the generator does), and for finer or
  // coarser experts divided or multiplied by the experts' factor (rounded to 64 and the sharding).
  int64_t Ffn(int64_t h, int64_t experts) const {
    int64_t f = h == b_.hidden_size
                    ? b_.ffn_hidden_size
                    : RoundTo(static_cast<double>(b_.ffn_hidden_size) * static_cast<double>(h) /
                                  static_cast<double>(b_.hidden_size),
                              tp_);
    if (experts != b_.num_experts && experts > 0 && b_.num_experts > 0) {
      const int64_t num = experts > b_.num_experts ? 1 : b_.num_experts / experts;
      const int64_t den = experts > b_.num_experts ? experts / b_.num_experts : 1;
      const int64_t step = std::lcm<int64_t>(64, tp_);
      f = (std::max<int64_t>(1, f * num / den) + step - 1) / step * step;
    }
    return f;
  }

  const ModelSpec& b_;
  const ModelSpec& c_;
  const int64_t tp_;
  const bool explicit_;
  uint32_t changed_ = 0;
};

int Bits(uint32_t m) { return __builtin_popcount(m); }

// Every set of a candidate's changes, fewest first, and what each undoes into (once).
class ChangeSets {
 public:
  ChangeSets(const Undoer& u, const CandidateRules& rules) : u_(u), rules_(rules) {
    const uint32_t all = u.changed();
    for (uint32_t m = all;; m = (m - 1) & all) {
      if (m != 0) sets_.push_back(m);
      if (m == 0) break;
    }
    std::stable_sort(sets_.begin(), sets_.end(), [](uint32_t a, uint32_t b) {
      return Bits(a) != Bits(b) ? Bits(a) < Bits(b) : a < b;
    });
    admitted_.resize(sets_.size());
  }

  uint32_t operator[](size_t i) const { return sets_[i]; }

  // The shape with set i undone when the rules admit it. Every change undone is the baseline
  // itself, whatever rounding would make of it.
  const std::optional<ModelSpec>& Admitted(size_t i) {
    if (!admitted_[i]) {
      admitted_[i] = sets_[i] == u_.changed() ? std::optional<ModelSpec>(rules_.base())
                                              : rules_.Admit(u_.Undo(sets_[i]));
    }
    return *admitted_[i];
  }

  // The smallest set containing `m` and none of `avoid` that undoes into an admitted shape
  // (every change: the baseline, at worst).
  size_t SmallestContaining(uint32_t m, uint32_t avoid = 0) {
    for (size_t i = 0; i < sets_.size(); ++i) {
      if ((sets_[i] & m) == m && (sets_[i] & avoid) == 0 && Admitted(i)) return i;
    }
    return sets_.size() - 1;  // the last set is every change
  }

 private:
  const Undoer& u_;
  const CandidateRules& rules_;
  std::vector<uint32_t> sets_;
  std::vector<std::optional<std::optional<ModelSpec>>> admitted_;
};

// A baseline the rules do not admit (it breaks the tensor-parallel degrees the request named:
// StrictTp) cannot be gone back to: the changes that only undo into it are required.
uint32_t RequiredChanges(ChangeSets& sets, uint32_t all, const CandidateRules& rules) {
  uint32_t required = 0;
  if (rules.Admit(rules.base())) return required;
  for (int p = 0; p < kParts; ++p) {
    if ((all >> p & 1u) && sets[sets.SmallestContaining(1u << p)] == all) required |= 1u << p;
  }
  return required;
}

// Each change not in `required`, in its smallest bundle without a required one; bundles that
// share a change merge (into the smallest admitted set holding both), so that every change is in
// exactly one. What needs a required change to undo joins `required`.
std::vector<size_t> Bundles(ChangeSets& sets, uint32_t all, uint32_t& required) {
  std::vector<size_t> bundles;
  for (int p = 0; p < kParts; ++p) {
    if ((all >> p & 1u) && !(required >> p & 1u)) {
      bundles.push_back(sets.SmallestContaining(1u << p, required));
    }
  }
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t a = 0; a < bundles.size() && !merged; ++a) {
      for (size_t b = a + 1; b < bundles.size() && !merged; ++b) {
        if (!(sets[bundles[a]] & sets[bundles[b]])) continue;
        bundles[a] = sets.SmallestContaining(sets[bundles[a]] | sets[bundles[b]], required);
        bundles.erase(bundles.begin() + static_cast<std::ptrdiff_t>(b));
        merged = true;
      }
    }
  }
  for (size_t i : bundles) {
    if (sets[i] & required) required |= sets[i];
  }
  bundles.erase(std::remove_if(bundles.begin(), bundles.end(),
                               [&](size_t i) { return (sets[i] & required) != 0; }),
                bundles.end());
  return bundles;
}

// The change or bundle `set` in words, with the shape without it.
CandidateChange Describe(const Undoer& u, uint32_t set, ModelSpec without, bool required) {
  CandidateChange ch;
  for (int q = 0; q < kParts; ++q) {
    if (set >> q & 1u) ch.parts.push_back(u.Words(static_cast<Part>(q)));
  }
  ch.words = absl::StrJoin(ch.parts, " + ");
  if (ch.parts.size() == 1) ch.parts.clear();
  ch.without = std::move(without);
  ch.required = required;
  return ch;
}

}  // namespace

std::vector<CandidateChange> ChangesOf(const ModelSpec& candidate, const CandidateRules& rules) {
  const Undoer u(rules.base(), candidate, rules.tp_lcm());
  const uint32_t all = u.changed();
  ChangeSets sets(u, rules);
  // A required change is a bundle of its own that stays, its gain against the baseline.
  uint32_t required = RequiredChanges(sets, all, rules);
  const std::vector<size_t> bundles = Bundles(sets, all, required);
  std::vector<CandidateChange> out;
  if (required != 0) {
    out.push_back(Describe(u, required, rules.base(), true));
    // The candidate with only its required changes, when the rules admit it (they need not).
    if (required != all) out.back().alone = rules.Admit(u.Undo(all & ~required));
  }
  for (size_t i : bundles) out.push_back(Describe(u, sets[i], *sets.Admitted(i), false));
  return out;
}

bool EarnsItsKeep(double gain, double sigma) { return gain - 1 > std::max(sigma, kMinKnobGain); }

namespace {

// One candidate made minimal in place: the change that loses least is undone while one does not
// earn its keep; then every change's gain is recorded. A candidate that does not beat the
// baseline is only described (undoing its changes would give the baseline back), unless it has a
// required change (the baseline breaks the degrees asked): that one stays, the rest earn their keep.
void Minimize(CandidateScore& c, const CandidateRules& rules, const ShapeScoreFn& score,
              const CandidateScore* baseline) {
  const bool winner = Beats(c);
  for (int round = 0; round < 8; ++round) {
    std::vector<CandidateScore::KnobGain> gains;
    std::optional<CandidateScore> undo;
    double undo_gain = 0;
    std::vector<CandidateChange> changes = ChangesOf(c.spec, rules);
    // A shape the degrees asked need (its required change) is what the answer recommends, as a
    // winner is: its other changes earn their keep too.
    const bool minimize = winner || std::any_of(changes.begin(), changes.end(),
                                                [](const CandidateChange& ch) { return ch.required; });
    for (CandidateChange& ch : changes) {
      // Every change undone at once is the baseline, scored already.
      CandidateScore ws = baseline != nullptr && ch.without == rules.base()
                              ? *baseline
                              : score(ch.without);
      // A required change is worth what it alone does against the baseline (the candidate's
      // other changes undone), not the whole candidate's gain.
      const CandidateScore& with = ch.required && ch.alone ? score(*ch.alone) : c;
      const double m = Merit(ws);
      const double gain = m > 0 ? Merit(with) / m : 1;
      const double sigma = RatioUncertainty(ws, with);
      gains.push_back({std::move(ch.words), gain, sigma, std::move(ch.parts), ch.required});
      if (minimize && !ch.required && !EarnsItsKeep(gain, sigma) &&
          (!undo || gain < undo_gain)) {
        undo = std::move(ws);
        undo_gain = gain;
      }
    }
    if (!undo) {
      c.knob_gains = std::move(gains);
      break;
    }
    undo->baseline = false;
    undo->speedup = c.speedup / undo_gain;  // for Beats() in the next round; ranking redoes it
    undo->speedup_uncertainty = c.speedup_uncertainty;
    c = *std::move(undo);
  }
  c.minimized = true;
}

bool SameShape(const ModelSpec& a, const ModelSpec& b) {
  return a.hidden_size == b.hidden_size && a.num_attention_heads == b.num_attention_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
         a.ffn_hidden_size == b.ffn_hidden_size && a.vocab_size == b.vocab_size &&
         a.num_layers == b.num_layers && a.num_experts == b.num_experts &&
         a.experts_per_token == b.experts_per_token &&
         a.shared_expert_ffn_hidden_size == b.shared_expert_ffn_hidden_size;
}

// Rounds of minimizing the first `shown` of `top` until all of them are minimized: minimizing
// makes a candidate slower, so another may rise among them. A shape that became the baseline's is
// not a candidate; others that met are one (ranking drops the repeats).
void MinimizeShown(std::vector<CandidateScore>& top, const CandidateRules& rules,
                   const ShapeScoreFn& score, const CandidateScore* baseline, size_t shown,
                   size_t explain) {
  for (size_t round = 0; round <= top.size(); ++round) {
    bool changed = false;
    size_t seen = 0;
    for (size_t i = 0; i < top.size() && seen < shown; ++i) {
      if (top[i].baseline) continue;
      ++seen;
      if (top[i].minimized) continue;
      Minimize(top[i], rules, score, baseline);
      changed = true;
    }
    if (!changed) return;
    top.erase(std::remove_if(top.begin(), top.end(),
                             [&](const CandidateScore& s) {
                               return !s.baseline && SameShape(s.spec, rules.base());
                             }),
              top.end());
    RankCandidates(top, explain);
  }
}

}  // namespace

void MinimizeCandidates(std::vector<CandidateScore>& ranked, const CandidateRules& rules,
                        const ShapeScoreFn& score, size_t shown, size_t explain) {
  // Only the head of the ranking can change: minimizing makes a candidate slower, never faster,
  // and what is shown is the first `shown`. Re-ranking that head (with the baseline, which the
  // speed-ups are ratios to) instead of every candidate keeps a wide search's cost flat.
  const size_t head = std::min(ranked.size(), 4 * shown + 8);
  auto base = std::find_if(ranked.begin(), ranked.end(),
                           [](const CandidateScore& s) { return s.baseline; });
  if (base != ranked.end() && static_cast<size_t>(base - ranked.begin()) >= head) {
    std::rotate(ranked.begin() + static_cast<std::ptrdiff_t>(head), base, base + 1);
  }
  const size_t take = std::min(ranked.size(), head + (base != ranked.end() ? 1 : 0));
  std::vector<CandidateScore> top(
      std::make_move_iterator(ranked.begin()),
      std::make_move_iterator(ranked.begin() + static_cast<std::ptrdiff_t>(take)));
  std::optional<CandidateScore> baseline;
  for (const CandidateScore& s : top) {
    if (s.baseline) baseline = s;
  }
  if (baseline) baseline->baseline = false;  // what an undone candidate is scored as
  // Minimizing makes a candidate slower, so another may rise into the first `shown`: rounds until
  // every one shown is minimized (each round minimizes at least one; `top` is finite). Minimized
  // candidates that meet are one, so the head can run short of `shown`: then the next of the
  // ranking come in and the rounds go on (granite-3.0-8b's many vocabulary pads meet this way).
  size_t next = take;  // the first of `ranked` not in `top`
  while (true) {
    MinimizeShown(top, rules, score, baseline ? &*baseline : nullptr, shown, explain);
    const size_t candidates = static_cast<size_t>(
        std::count_if(top.begin(), top.end(), [](const CandidateScore& s) { return !s.baseline; }));
    if (candidates >= shown || next >= ranked.size()) break;
    const size_t more = std::min(ranked.size(), next + shown + 8);
    top.insert(top.end(),
               std::make_move_iterator(ranked.begin() + static_cast<std::ptrdiff_t>(next)),
               std::make_move_iterator(ranked.begin() + static_cast<std::ptrdiff_t>(more)));
    next = more;
  }
  // Back in place (top is never longer than what it came from): no second copy of a wide search.
  std::move(top.begin(), top.end(), ranked.begin());
  ranked.erase(ranked.begin() + static_cast<std::ptrdiff_t>(top.size()),
               ranked.begin() + static_cast<std::ptrdiff_t>(next));
}

}  // namespace wavecrest
