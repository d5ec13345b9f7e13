#include "core/minimal_candidates.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"

namespace wavecrest {
namespace {

std::string Arrow(absl::string_view what, int64_t from, int64_t to) {
  return absl::StrCat(what, " ", from, " → ", to);
}

int64_t RoundTo(double x, int64_t m) {
  return std::max<int64_t>(m, static_cast<int64_t>(std::llround(x / static_cast<double>(m))) * m);
}

// Shared experts that are whole experts follow the expert width (as the generator makes them).
void SetFfn(ModelSpec& s, const ModelSpec& candidate, int64_t f) {
  if (candidate.num_experts > 0 && candidate.shared_expert_ffn_hidden_size > 0 &&
      candidate.ffn_hidden_size > 0 &&
      candidate.shared_expert_ffn_hidden_size % candidate.ffn_hidden_size == 0) {
    s.shared_expert_ffn_hidden_size =
        candidate.shared_expert_ffn_hidden_size / candidate.ffn_hidden_size * f;
  }
  s.ffn_hidden_size = f;
}

// Heads for hidden size `h` at the head dim `d`, the KV heads keeping `like`'s group size.
bool SetHeads(ModelSpec& s, int64_t h, int64_t d, const ModelSpec& like) {
  if (d <= 0 || h % d != 0) return false;
  const int64_t a = h / d;
  s.num_attention_heads = a;
  s.head_dim = d;
  if (like.num_kv_heads == like.num_attention_heads) {
    s.num_kv_heads = a;
  } else if (like.num_attention_heads % like.num_kv_heads == 0) {
    const int64_t group = like.num_attention_heads / like.num_kv_heads;
    if (a % group != 0) return false;
    s.num_kv_heads = a / group;
  }
  return true;
}

// The MLP width hidden size `h` implies for `base` (the generator's scaled target).
int64_t ScaledFfn(const ModelSpec& base, int64_t h, int64_t tp_lcm) {
  if (h == base.hidden_size) return base.ffn_hidden_size;
  return RoundTo(static_cast<double>(base.ffn_hidden_size) * static_cast<double>(h) /
                     static_cast<double>(base.hidden_size),
                 tp_lcm);
}

// `c` back at the baseline's width: the head dim kept (the baseline's heads when it is the
// baseline's), the MLP width scaled back unless it moved on its own, the baseline's layers.
ModelSpec WithoutHidden(const ModelSpec& b, const ModelSpec& c, bool ffn_moved) {
  ModelSpec w = c;
  w.hidden_size = b.hidden_size;
  const bool same_dim = c.head_dim == b.head_dim;
  if (same_dim) {
    w.num_attention_heads = b.num_attention_heads;
    w.num_kv_heads = b.num_kv_heads;
  } else if (c.num_attention_heads * c.head_dim == c.hidden_size &&
             !SetHeads(w, b.hidden_size, c.head_dim, c)) {
    w.num_attention_heads = 0;  // no such shape: the rules refuse it
  }
  SetFfn(w, c, ffn_moved ? c.ffn_hidden_size : b.ffn_hidden_size);
  w.num_layers = b.num_layers;
  return w;
}

}  // namespace

std::vector<CandidateChange> ChangesOf(const ModelSpec& b, const ModelSpec& c, int64_t tp_lcm) {
  std::vector<CandidateChange> out;
  const bool hidden = c.hidden_size != b.hidden_size;
  const bool heads = c.num_attention_heads != b.num_attention_heads || c.head_dim != b.head_dim;
  const bool layers = c.num_layers != b.num_layers;
  const int64_t implied_f = ScaledFfn(b, c.hidden_size, tp_lcm);
  const bool ffn = c.ffn_hidden_size != implied_f;
  if (c.vocab_size != b.vocab_size) {
    ModelSpec w = c;
    w.vocab_size = b.vocab_size;
    out.push_back({Arrow("v", b.vocab_size, c.vocab_size), w});
  }
  if (hidden) out.push_back({Arrow("h", b.hidden_size, c.hidden_size), WithoutHidden(b, c, ffn)});
  if (heads) {
    ModelSpec w = c;
    if (!hidden) {
      w.num_attention_heads = b.num_attention_heads;
      w.head_dim = b.head_dim;
      w.num_kv_heads = b.num_kv_heads;
    } else if (!SetHeads(w, c.hidden_size, b.head_dim, b)) {
      w.num_attention_heads = 0;
    }
    out.push_back({absl::StrCat("a ", b.num_attention_heads, " → ", c.num_attention_heads, ": h/a ",
                                b.head_dim, " → ", c.head_dim),
                   w});
  }
  // KV heads that moved on their own (not with the heads at the same group size).
  const bool kv_follows =
      heads && b.num_kv_heads > 0 && c.num_kv_heads > 0 &&
      ((b.num_kv_heads == b.num_attention_heads && c.num_kv_heads == c.num_attention_heads) ||
       (b.num_attention_heads % b.num_kv_heads == 0 &&
        c.num_attention_heads == c.num_kv_heads * (b.num_attention_heads / b.num_kv_heads)));
  if (c.num_kv_heads != b.num_kv_heads && !kv_follows) {
    ModelSpec w = c;
    w.num_kv_heads = b.num_kv_heads;
    out.push_back({Arrow("a_kv", b.num_kv_heads, c.num_kv_heads), w});
  }
  if (ffn) {
    ModelSpec w = c;
    SetFfn(w, c, implied_f);
    if (!hidden) w.num_layers = b.num_layers;  // the layers that kept the width in budget
    out.push_back({Arrow(c.num_experts > 0 ? "expert width f" : "f", b.ffn_hidden_size,
                         c.ffn_hidden_size),
                   w});
  }
  if (layers) {
    ModelSpec w = c;
    w.num_layers = b.num_layers;
    out.push_back({Arrow("L", b.num_layers, c.num_layers), w});
  }
  if (c.num_experts != b.num_experts || c.experts_per_token != b.experts_per_token) {
    ModelSpec w = c;
    w.num_experts = b.num_experts;
    w.experts_per_token = b.experts_per_token;
    if (b.num_experts > 0) {
      SetFfn(w, c,
             RoundTo(static_cast<double>(c.ffn_hidden_size) * c.num_experts / b.num_experts,
                     std::lcm<int64_t>(64, tp_lcm)));
    }
    out.push_back({absl::StrCat("experts ", b.num_experts, " → ", c.num_experts, ", top-",
                                b.experts_per_token, " → top-", c.experts_per_token),
                   w});
  }
  return out;
}

bool EarnsItsKeep(double gain, double sigma) {
  return gain - 1 > std::max(sigma, kMinKnobGain);
}

namespace {

// One candidate made minimal in place: the change that loses least is undone while one does not
// earn its keep; then every change's gain is recorded. A candidate that does not beat the
// baseline is only described (undoing its changes would give the baseline back).
void Minimize(CandidateScore& c, const CandidateRules& rules, const ShapeScoreFn& score) {
  const bool winner = Beats(c);
  const ModelSpec& base = rules.base();
  const int64_t tp_lcm = rules.tp_lcm();
  for (int round = 0; round < 8; ++round) {
    std::vector<CandidateScore::KnobGain> gains;
    std::optional<CandidateScore> undo;
    double undo_gain = 0;
    for (const CandidateChange& ch : ChangesOf(base, c.spec, tp_lcm)) {
      std::optional<ModelSpec> w = rules.Admit(ch.without);
      if (!w) {
        gains.push_back({ch.words, 0, 0});  // cannot be undone alone: it stays
        continue;
      }
      CandidateScore ws = score(*w);
      const double m = Merit(ws);
      const double gain = m > 0 ? Merit(c) / m : 1;
      const double sigma = RatioUncertainty(ws, c);
      gains.push_back({ch.words, gain, sigma});
      if (winner && !EarnsItsKeep(gain, sigma) && (!undo || gain < undo_gain)) {
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
  std::vector<CandidateScore> top(std::make_move_iterator(ranked.begin()),
                                  std::make_move_iterator(ranked.begin() +
                                                          static_cast<std::ptrdiff_t>(take)));
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    size_t seen = 0;
    for (size_t i = 0; i < top.size() && seen < shown; ++i) {
      if (top[i].baseline) continue;
      ++seen;
      if (top[i].minimized) continue;
      Minimize(top[i], rules, score);
      changed = true;
    }
    if (!changed) break;
    // A shape that became the baseline's is not a candidate; others that met are one (ranking
    // drops the repeats).
    top.erase(std::remove_if(top.begin(), top.end(),
                             [&](const CandidateScore& s) {
                               return !s.baseline && SameShape(s.spec, rules.base());
                             }),
              top.end());
    RankCandidates(top, explain);
  }
  // Back in place (top is never longer than what it came from): no second copy of a wide search.
  std::move(top.begin(), top.end(), ranked.begin());
  ranked.erase(ranked.begin() + static_cast<std::ptrdiff_t>(top.size()),
               ranked.begin() + static_cast<std::ptrdiff_t>(take));
}

}  // namespace wavecrest
