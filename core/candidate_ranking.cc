// The ranking of scored candidates (core/recommend.h, RankCandidates): what they are compared by
// (Merit), those that beat the baseline first, and among candidates the model cannot tell apart
// the smaller change first.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/minimal_candidates.h"
#include "core/recommend.h"
#include "core/recommend_detail.h"

namespace wavecrest {

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

// How large a change `c` makes to `b`, for ordering candidates the model cannot tell apart:
// the fields it changes (vocabulary, hidden size, head dim, KV group, an MLP width that moved on
// its own rather than with the hidden size, layers, experts), whether it moves the head dim to
// one attention kernels are not tuned for (TunedHeadDim), its parameter change, and how far its
// values moved (relative, summed): the nearest aligned value last.
struct ChangeSize {
  int fields = 0;
  int untuned_head_dim = 0;
  double abs_param_change = 0;
  double distance = 0;
  bool operator<(const ChangeSize& o) const {
    return std::tie(fields, untuned_head_dim, abs_param_change, distance) <
           std::tie(o.fields, o.untuned_head_dim, o.abs_param_change, o.distance);
  }
};

ChangeSize SizeOf(const ModelSpec& b, const CandidateScore& c) {
  const ModelSpec& s = c.spec;
  ChangeSize z;
  auto field = [&](double from, double to) {
    if (from == to) return;
    ++z.fields;
    z.distance += std::abs(to - from) / std::max(1.0, std::abs(from));
  };
  auto group = [](const ModelSpec& m) {
    return static_cast<double>(m.num_attention_heads) /
           static_cast<double>(std::max<int64_t>(1, m.num_kv_heads));
  };
  field(b.vocab_size, s.vocab_size);
  field(b.hidden_size, s.hidden_size);
  field(b.head_dim, s.head_dim);
  field(group(b), group(s));
  // The width the hidden size implies; a sharded width rounds to at most a few elements of it.
  const double follows = static_cast<double>(b.ffn_hidden_size) * s.hidden_size / b.hidden_size;
  if (s.num_experts == b.num_experts &&
      (s.hidden_size == b.hidden_size
           ? s.ffn_hidden_size != b.ffn_hidden_size
           : std::abs(static_cast<double>(s.ffn_hidden_size) - follows) >= 32)) {
    field(follows, s.ffn_hidden_size);
  }
  field(b.num_layers, s.num_layers);
  field(b.num_experts, s.num_experts);
  z.untuned_head_dim = s.head_dim != b.head_dim && !TunedHeadDim(s);
  z.abs_param_change = std::abs(c.param_change);
  return z;
}

// Σ_g σ_g² w_g² of a candidate's step (w_g the term's share of it): σ of its ratio to another is
// at most sqrt(2 (this + the other's)), since (a − b)² ≤ 2a² + 2b² term by term.
double SpreadOf(const CandidateScore& c) {
  double v = 0;
  for (const Contribution& x : c.contributions) {
    const double w = c.step_time_s > 0 ? x.time_s / c.step_time_s : 0;
    v += x.relative_sigma * x.relative_sigma * w * w;
  }
  return v;
}

// Among the winners order[0, beating) (indices into `scores`, in merit order), each of the first
// `positions` places goes to the smallest change (ChangeSize) of those the best one left does not
// beat by more than their ratio's uncertainty and kMinKnobGain (EarnsItsKeep): the model cannot
// tell them apart, so the change a team would rather make comes first, and a bundle that adds
// nothing beyond its uncertainty to a smaller candidate ranks after it. The rest keep their merit
// order.
void SmallerAmongEquals(std::vector<CandidateScore>& scores, std::vector<size_t>& order,
                        size_t beating, size_t positions, const ModelSpec& base) {
  positions = std::min(positions, beating);
  if (positions == 0) return;
  std::vector<double> spread(beating);
  double max_spread = 0;
  for (size_t i = 0; i < beating; ++i) {
    spread[i] = SpreadOf(scores[order[i]]);
    max_spread = std::max(max_spread, spread[i]);
  }
  for (size_t pos = 0; pos < positions; ++pos) {
    const CandidateScore& leader = scores[order[pos]];
    const double lead = Merit(leader);
    // Beyond this gap no later (slower) winner can be within the leader's uncertainty.
    const double reach = std::max(kMinKnobGain, std::sqrt(2 * (spread[pos] + max_spread)));
    size_t chosen = pos;
    ChangeSize smallest = SizeOf(base, leader);
    for (size_t j = pos + 1; j < beating; ++j) {
      const CandidateScore& x = scores[order[j]];
      const double m = Merit(x);
      if (!(m > 0) || lead / m - 1 > reach) break;
      if (lead / m - 1 > std::max(kMinKnobGain, std::sqrt(2 * (spread[pos] + spread[j])))) {
        continue;  // beyond even the largest uncertainty the two could have
      }
      if (EarnsItsKeep(lead / m, RatioUncertainty(x, leader))) continue;
      const ChangeSize z = SizeOf(base, x);
      if (z < smallest) smallest = z, chosen = j;
    }
    if (chosen == pos) continue;
    scores[order[chosen]].ranked_note = absl::StrFormat(
        "ranked above a faster-looking candidate (%.3fx ± %.3f) that the model cannot tell apart "
        "from it: among equals the smaller change comes first (%d field%s changed, %+.2f%% "
        "parameters)",
        leader.speedup, leader.speedup_uncertainty, smallest.fields, smallest.fields == 1 ? "" : "s",
        100 * scores[order[chosen]].param_change);
    auto at = [&](size_t k) { return order.begin() + static_cast<std::ptrdiff_t>(k); };
    std::rotate(at(pos), at(chosen), at(chosen + 1));
    std::rotate(spread.begin() + static_cast<std::ptrdiff_t>(pos),
                spread.begin() + static_cast<std::ptrdiff_t>(chosen),
                spread.begin() + static_cast<std::ptrdiff_t>(chosen + 1));
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
    recommend_detail::SpecKey key;
  };
  const recommend_detail::SpecKey b = recommend_detail::KeyOf(base ? base->spec : ModelSpec());
  std::vector<Order> order;
  order.reserve(scores.size());
  for (const CandidateScore& s : scores) {
    const recommend_detail::SpecKey a = recommend_detail::KeyOf(s.spec);
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
  absl::flat_hash_set<recommend_detail::SpecKey> seen;
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
    for (CandidateScore& s : scores) s.ranked_note.clear();
    SmallerAmongEquals(scores, kept, beating, explain, base_copy.spec);
  }
  ApplyOrder(scores, kept);
  if (!base) return;
  // Reasons for what will be shown: words cost more than numbers.
  for (size_t i = 0; i < std::min(explain, scores.size()); ++i) {
    if (scores[i].baseline) continue;
    scores[i].reasons = Explain(base_copy, scores[i]);
    if (!scores[i].ranked_note.empty()) scores[i].reasons.push_back(scores[i].ranked_note);
  }
}

bool Beats(const CandidateScore& c) {
  return !c.baseline && c.speedup - 1 > std::max(c.speedup_uncertainty, kMinWorthwhileGain);
}

}  // namespace wavecrest
