#include "core/timing_stats.h"

#include <algorithm>
#include <cmath>

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

bool StoppingRule::Done(const std::vector<double>& samples, double elapsed_s) const {
  const int n = static_cast<int>(samples.size());
  if (n >= max_samples) return true;
  double sampled = 0;
  for (double v : samples) sampled += v * sample_scale;
  if (sampled < min_sampled_s && elapsed_s <= std::max(budget_s, 4 * min_sampled_s)) return false;
  if (n >= min_samples && Summarize(samples).relative_spread <= target_spread) return true;
  return n >= 3 && elapsed_s > budget_s;
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
