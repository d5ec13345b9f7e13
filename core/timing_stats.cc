#include "core/timing_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace wavecrest {

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

SampleStats Summarize(const std::vector<double>& samples) {
  SampleStats s;
  s.samples = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  s.median = Percentile(samples, 0.5);
  s.p10 = Percentile(samples, 0.1);
  s.p90 = Percentile(samples, 0.9);
  s.relative_spread = s.median > 0 ? (s.p90 - s.p10) / s.median : 0;
  return s;
}

double MedianHalfWidth(const std::vector<double>& samples) {
  const size_t n = samples.size();
  if (n < 8) return std::numeric_limits<double>::infinity();
  std::vector<double> v = samples;
  std::sort(v.begin(), v.end());
  const double half = 0.98 * std::sqrt(static_cast<double>(n));
  const double mid = static_cast<double>(n) / 2;
  const size_t lo = static_cast<size_t>(std::max(0.0, std::floor(mid - half)));
  const size_t hi = std::min(n - 1, static_cast<size_t>(std::ceil(mid + half)));
  const double median = Percentile(v, 0.5);
  return median > 0 ? (v[hi] - v[lo]) / 2 / median : std::numeric_limits<double>::infinity();
}

namespace {

// The medians of the first and the second half of the samples agree within `tolerance` (relative).
// An interval checked after every sample is sometimes narrow by chance (the more looks, the more
// chances); a median that the later samples did not move is the other half of "stable". It also
// keeps a slow drift from passing for a pinned median. (Two clock states in equal shares have no
// stable median at all: a run may stop in either; its spread, reported beside, says so.)
bool HalvesAgree(const std::vector<double>& samples, double tolerance) {
  const size_t half = samples.size() / 2;
  const double first = Percentile({samples.begin(), samples.begin() + half}, 0.5);
  const double second = Percentile({samples.begin() + half, samples.end()}, 0.5);
  const double all = Percentile(samples, 0.5);
  return all > 0 && std::abs(first - second) / all <= tolerance;
}

}  // namespace

StopReason StoppingRule::Why(const std::vector<double>& samples, double elapsed_s) const {
  const int n = static_cast<int>(samples.size());
  if (n >= max_samples) return StopReason::kMaxSamples;
  double sampled = 0;
  for (double v : samples) sampled += v * sample_scale;
  if (sampled < min_sampled_s && elapsed_s <= std::max(budget_s, 4 * min_sampled_s)) {
    return StopReason::kNotYet;
  }
  if (n >= min_samples && Summarize(samples).relative_spread <= target_spread) {
    return StopReason::kSpread;
  }
  if (median_precision > 0 && n >= std::max(min_samples, kMinSamplesForMedian) &&
      MedianHalfWidth(samples) <= median_precision && HalvesAgree(samples, 2 * median_precision)) {
    return StopReason::kMedianStable;
  }
  return n >= 3 && elapsed_s > budget_s ? StopReason::kBudget : StopReason::kNotYet;
}

Replayed ReplayStop(const StoppingRule& rule, const std::vector<double>& samples,
                    double sampling_wall_s) {
  Replayed r;
  std::vector<double> taken;
  taken.reserve(samples.size());
  const double per_sample = samples.empty() ? 0 : sampling_wall_s / samples.size();
  for (double v : samples) {
    taken.push_back(v);
    r.why = rule.Why(taken, per_sample * static_cast<double>(taken.size()));
    if (r.why != StopReason::kNotYet) break;
  }
  r.samples = static_cast<int>(taken.size());
  return r;
}

absl::string_view StopReasonName(StopReason why) {
  switch (why) {
    case StopReason::kSpread:
      return "spread";
    case StopReason::kMedianStable:
      return "median";
    case StopReason::kBudget:
      return "budget";
    case StopReason::kMaxSamples:
      return "cap";
    case StopReason::kNotYet:
      break;
  }
  return "-";
}

std::string DescribeStop(StopReason why, const std::vector<double>& samples,
                         const StoppingRule& rule) {
  const SampleStats s = Summarize(samples);
  const double half = MedianHalfWidth(samples);
  const std::string median =
      std::isfinite(half) ? absl::StrFormat("median ±%.2f%% (95%%)", 100 * half) : "median ±?";
  const std::string seen = absl::StrFormat("after %d samples (spread %.2f%%, %s)", s.samples,
                                           100 * s.relative_spread, median);
  switch (why) {
    case StopReason::kSpread:
      return absl::StrFormat("spread at most %.2f%% %s", 100 * rule.target_spread, seen);
    case StopReason::kMedianStable:
      return absl::StrFormat("median stable to ±%.2f%% %s", 100 * rule.median_precision, seen);
    case StopReason::kBudget:
      return absl::StrFormat("time budget (%.2f s) spent %s", rule.budget_s, seen);
    case StopReason::kMaxSamples:
      return absl::StrFormat("sample cap (%d) reached %s", rule.max_samples, seen);
    case StopReason::kNotYet:
      break;
  }
  return absl::StrCat("not stopped ", seen);
}

int LaunchesPerSample(double estimate_s, double sample_target_s, int max_launches) {
  const double e = std::max(estimate_s, 1e-9);
  return static_cast<int>(std::clamp(std::ceil(sample_target_s / e), 1.0,
                                     static_cast<double>(std::max(max_launches, 1))));
}

int InputSets(int64_t set_bytes, int64_t l2_bytes, int64_t usable_bytes, bool warm_l2) {
  if (warm_l2 || set_bytes <= 0) return 1;
  int64_t sets = std::clamp<int64_t>((3 * l2_bytes + set_bytes - 1) / set_bytes, 1, kMaxInputSets);
  sets = std::min<int64_t>(sets, std::max<int64_t>(usable_bytes / set_bytes, 1));
  return static_cast<int>(sets);
}

}  // namespace wavecrest
