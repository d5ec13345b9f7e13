#include "core/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace wavecrest {

namespace {

constexpr absl::string_view kAllowed =
    "allowed: balanced, zipf:S (0 <= S <= 4), counts:N,N,... (one per expert)";

std::string Prefix(absl::string_view field) {
  return field.empty() ? "" : absl::StrCat(field, ": ");
}

// Shares of `total` in proportion to `weights` (descending), none above `cap`: what a capped
// share leaves is spread over the others in proportion (water filling).
std::vector<double> CappedShares(const std::vector<double>& weights, double total, double cap) {
  std::vector<double> share(weights.size(), 0);
  std::vector<bool> capped(weights.size(), false);
  double left = total;
  for (size_t round = 0; round <= weights.size() && left > 0; ++round) {
    double weight = 0;
    for (size_t i = 0; i < weights.size(); ++i) weight += capped[i] ? 0 : weights[i];
    if (weight <= 0) break;
    bool any_capped = false;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (capped[i]) continue;
      const double want = left * weights[i] / weight;
      if (share[i] + want > cap) any_capped = true;
    }
    if (!any_capped) {
      for (size_t i = 0; i < weights.size(); ++i) {
        if (!capped[i]) share[i] += left * weights[i] / weight;
      }
      break;
    }
    // Cap every expert the proportional share would push past the cap, then spread the rest.
    for (size_t i = 0; i < weights.size(); ++i) {
      if (!capped[i] && share[i] + left * weights[i] / weight > cap) {
        capped[i] = true;
        share[i] = cap;
      }
    }
    left = total;
    for (size_t i = 0; i < weights.size(); ++i) left -= capped[i] ? share[i] : 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (!capped[i]) share[i] = 0;
    }
  }
  return share;
}

// Whole rows by largest remainder: the counts sum to round(total).
std::vector<int64_t> Rounded(const std::vector<double>& share) {
  std::vector<int64_t> out(share.size());
  double total = 0;
  int64_t assigned = 0;
  for (size_t i = 0; i < share.size(); ++i) {
    out[i] = static_cast<int64_t>(std::floor(share[i]));
    assigned += out[i];
    total += share[i];
  }
  int64_t missing = static_cast<int64_t>(std::llround(total)) - assigned;
  std::vector<size_t> order(share.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return share[a] - std::floor(share[a]) > share[b] - std::floor(share[b]);
  });
  for (size_t i = 0; i < order.size() && missing > 0; ++i, --missing) ++out[order[i]];
  return out;
}

}  // namespace

std::string RoutingName(const MoeRouting& r) {
  if (!r.counts.empty()) return absl::StrCat("counts:", absl::StrJoin(r.counts, ","));
  if (r.zipf == 0) return "balanced";
  return absl::StrCat("zipf", r.zipf);
}

absl::StatusOr<MoeRouting> ParseRouting(absl::string_view text, absl::string_view field) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  MoeRouting r;
  if (t.empty() || t == "balanced") return r;
  if (absl::StartsWith(t, "zipf")) {
    absl::string_view v = absl::string_view(t).substr(4);
    absl::ConsumePrefix(&v, ":");
    double s = 0;
    if (!absl::SimpleAtod(v, &s) || !(s >= 0 && s <= kMaxZipfExponent)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Prefix(field), "\"", text, "\": the Zipf exponent must be in [0, ",
                       kMaxZipfExponent, "]; ", kAllowed));
    }
    r.zipf = s;
    return r;
  }
  if (absl::StartsWith(t, "counts:")) {
    for (absl::string_view n : absl::StrSplit(absl::string_view(t).substr(7), ',')) {
      int64_t c = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(n), &c) || c < 0 || c > (int64_t{1} << 40)) {
        return absl::InvalidArgumentError(absl::StrCat(
            Prefix(field), "\"", n, "\" is not a count (a whole number in [0, 2^40]); ", kAllowed));
      }
      r.counts.push_back(c);
      if (r.counts.size() > kMaxRoutingCounts) {
        return absl::InvalidArgumentError(
            absl::StrCat(Prefix(field), "at most ", kMaxRoutingCounts, " counts"));
      }
    }
    if (std::all_of(r.counts.begin(), r.counts.end(), [](int64_t c) { return c == 0; })) {
      return absl::InvalidArgumentError(absl::StrCat(Prefix(field), "the counts are all zero"));
    }
    return r;
  }
  return absl::InvalidArgumentError(absl::StrCat(Prefix(field), "unknown \"", text, "\"; ", kAllowed));
}

absl::Status CheckRouting(const MoeRouting& r, int64_t num_experts, absl::string_view field) {
  if (r.counts.empty() || static_cast<int64_t>(r.counts.size()) == num_experts) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(Prefix(field), r.counts.size(),
                                                 " counts for a layer of ", num_experts,
                                                 " experts; give one per expert"));
}

std::vector<int64_t> ExpertTokenCounts(const ModelSpec& layer, const MoeRouting& routing) {
  if (layer.num_experts <= 0) return {};
  const DerivedShape d = Derive(layer);
  const int64_t local = d.experts_per_rank;
  if (layer.moe_capacity_factor > 0 || routing.balanced()) {
    // Padded to capacity, or balanced: every expert the same, as the planner's batched GEMM.
    return std::vector<int64_t>(local, layer.moe_capacity_factor > 0 ? d.expert_tokens
                                                                     : d.expert_tokens_routed);
  }
  const int64_t E = layer.num_experts;
  const int64_t e = std::max<int64_t>(layer.expert_parallel, 1);
  const int64_t t = layer.tensor_parallel;
  const int64_t routed = ExpertTensorParallel(layer) == t ? d.tokens : (d.tokens + t - 1) / t;
  std::vector<double> weights(E, 0);
  if (!routing.counts.empty()) {
    std::vector<int64_t> sorted = routing.counts;
    sorted.resize(E, 0);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    for (int64_t i = 0; i < E; ++i) weights[i] = static_cast<double>(sorted[i]);
  } else {
    for (int64_t i = 0; i < E; ++i) weights[i] = std::pow(static_cast<double>(i + 1), -routing.zipf);
  }
  const double copies = static_cast<double>(routed * layer.experts_per_token * e);
  std::vector<int64_t> all = Rounded(CappedShares(weights, copies, static_cast<double>(routed * e)));
  all.resize(local);  // the busiest E/e: the rank the step waits for
  return all;
}

}  // namespace wavecrest
