// The statistics and the decisions of the timing method, kept apart from CUDA so that they are
// tested on any machine: percentiles and relative spread of samples, the noise-based stopping rule,
// how many launches go in one sample, and how many input sets rotate to keep L2 cold.
#ifndef WAVECREST_CORE_TIMING_STATS_H_
#define WAVECREST_CORE_TIMING_STATS_H_

#include <cstdint>
#include <vector>

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

// When to stop sampling: once there are at least `min_samples`, at least `min_sampled_s` of timed
// work (steady power and clocks) and the relative spread is at most `target_spread`; or once the
// budget is spent (with at least 3 samples and the minimum sampled time); or at `max_samples`.
struct StoppingRule {
  double target_spread = 0.01;
  double budget_s = 2.0;
  int min_samples = 10;
  int max_samples = 2000;
  double min_sampled_s = 0;  // sum of the samples' durations (seconds of timed work)
  double sample_scale = 1;   // a sample's duration = value × sample_scale (launches per sample)
  bool Done(const std::vector<double>& samples, double elapsed_s) const;
};

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
