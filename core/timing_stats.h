// The statistics and the decisions of the timing method, kept apart from CUDA so that they are
// tested on any machine: percentiles and relative spread of samples, the noise-based stopping rule,
// how many launches go in one sample, and how many input sets rotate to keep L2 cold.
#ifndef WAVECREST_CORE_TIMING_STATS_H_
#define WAVECREST_CORE_TIMING_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace wavecrest {

// Linear interpolation between closest ranks; q in [0, 1]. `v` must not be empty.
double Percentile(std::vector<double> v, double q);

struct SampleStats {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  double relative_spread = 0;  // (p90 - p10) / median
  int samples = 0;
};
SampleStats Summarize(const std::vector<double>& samples);

// Relative half-width of a distribution-free 95% confidence interval of the median of `samples`:
// the order statistics n/2 ± 0.98·sqrt(n) (a median's rank is binomial(n, 1/2)), halved and
// divided by the median. Infinity below 8 samples. It shrinks as 1/sqrt(n) whatever the spread, so
// clocks that wander or rare outliers do not keep a measurement going once its median is pinned.
double MedianHalfWidth(const std::vector<double>& samples);

// Why sampling stopped.
enum class StopReason {
  kNotYet,
  kSpread,        // the relative spread fell to target_spread
  kMedianStable,  // more samples would no longer move the median (MedianHalfWidth)
  kBudget,        // the time budget ran out
  kMaxSamples,
};

// When to stop sampling: once there are at least `min_samples` and at least `min_sampled_s` of
// timed work (steady power and clocks), and either the relative spread is at most
// `target_spread` or (from kMinSamplesForMedian samples on) the median is known to within
// ±`median_precision` and the medians of the first and second half of the samples agree within
// twice that; or once the budget is spent (with at least 3 samples and the minimum sampled
// time); or at `max_samples`.
inline constexpr int kMinSamplesForMedian = 20;
struct StoppingRule {
  double target_spread = 0.01;
  // Half the re-run tolerance (1%): two runs that each pin their median to ±0.5% agree within 1%.
  // 0 turns the criterion off.
  double median_precision = 0.005;
  double budget_s = 2.0;
  int min_samples = 10;
  int max_samples = 2000;
  double min_sampled_s = 0;  // sum of the samples' durations (seconds of timed work)
  double sample_scale = 1;   // a sample's duration = value × sample_scale (launches per sample)
  StopReason Why(const std::vector<double>& samples, double elapsed_s) const;
  bool Done(const std::vector<double>& samples, double elapsed_s) const {
    return Why(samples, elapsed_s) != StopReason::kNotYet;
  }
};

// The rule replayed over a recorded stream: the samples in the order taken, spaced evenly over
// `sampling_wall_s`. How many it would have taken and why it would have stopped (kNotYet: it
// would have wanted more than the recording holds).
struct Replayed {
  int samples = 0;
  StopReason why = StopReason::kNotYet;
};
Replayed ReplayStop(const StoppingRule& rule, const std::vector<double>& samples,
                    double sampling_wall_s);
absl::string_view StopReasonName(StopReason why);  // "spread", "median", "budget", "cap", "-"

// What the rule saw when it stopped, for the timing's provenance: "median stable: ±0.31% (95%)
// after 140 samples (spread 4.2%)".
std::string DescribeStop(StopReason why, const std::vector<double>& samples,
                         const StoppingRule& rule);

// Launches in one timed sample so that it lasts about `sample_target_s` (launch gaps then stay a
// small part of it): ceil(target / estimate), in [1, max_launches].
int LaunchesPerSample(double estimate_s, double sample_target_s, int max_launches);

// Input sets to rotate through so that the working set covers three times L2 (cold L2), limited to
// kMaxInputSets and to what fits in `usable_bytes`; 1 when `warm_l2`. At least 1. (The engine
// allocates each operand's sets as one buffer, so many small sets cost one allocation.)
inline constexpr int kMaxInputSets = 8192;
int InputSets(int64_t set_bytes, int64_t l2_bytes, int64_t usable_bytes, bool warm_l2);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_TIMING_STATS_H_
