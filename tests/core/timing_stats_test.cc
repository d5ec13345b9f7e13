#include "core/timing_stats.h"

#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

TEST(TimingStats, PercentilesInterpolateAndSpreadIsRelative) {
  std::vector<double> v;
  for (int i = 10; i >= 0; --i) v.push_back(100 + i);  // 100..110, unsorted
  const SampleStats s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 105);
  EXPECT_DOUBLE_EQ(s.p10, 101);
  EXPECT_DOUBLE_EQ(s.p90, 109);
  EXPECT_DOUBLE_EQ(s.relative_spread, 8.0 / 105);
  EXPECT_EQ(s.samples, 11);
  EXPECT_DOUBLE_EQ(Percentile({3.0}, 0.9), 3.0);
  EXPECT_DOUBLE_EQ(Percentile({1.0, 2.0}, 0.5), 1.5);
}

// Issue 10, defect 6: quiet samples of a long GEMM stopped after ~10 ms of timed work, before
// power and clocks settle; now a minimum of sampled time comes first (bounded by the budget).
TEST(StoppingRule, WaitsForAMinimumOfSampledTime) {
  StoppingRule rule;
  rule.min_sampled_s = 0.3;
  rule.sample_scale = 4;                // 4 launches a sample
  std::vector<double> quiet(10, 2e-3);  // 10 × 4 × 2 ms = 80 ms sampled
  EXPECT_FALSE(rule.Done(quiet, 0.1));
  quiet.resize(38, 2e-3);  // 304 ms
  EXPECT_TRUE(rule.Done(quiet, 0.35));
  // A host far slower than the work cannot hold it past max(budget, 4 × minimum).
  EXPECT_TRUE(rule.Done(std::vector<double>(10, 2e-3), 2.5));
}

TEST(StoppingRule, StopsOnLowSpreadOnlyAfterMinSamples) {
  StoppingRule rule;
  std::vector<double> quiet(9, 1.0);
  EXPECT_FALSE(rule.Done(quiet, 0.01));  // 9 < min_samples
  quiet.push_back(1.0);
  EXPECT_TRUE(rule.Done(quiet, 0.01));
  // Noisy samples go on until the budget is spent.
  std::vector<double> noisy;
  for (int i = 0; i < 50; ++i) noisy.push_back(i % 2 ? 1.0 : 1.1);
  EXPECT_FALSE(rule.Done(noisy, 1.0));
  EXPECT_TRUE(rule.Done(noisy, 2.5));
  // ... but not with fewer than 3 samples, and never past max_samples.
  EXPECT_FALSE(rule.Done({1.0, 2.0}, 100));
  rule.max_samples = 50;
  EXPECT_TRUE(rule.Done(noisy, 0));
}

// Issue 21: recorded H100 runs kept sampling up to 2000 times while the spread stayed at 2-14%
// (clocks that wander). Synthetic streams (a fixed seed, 1 ms per sample) stand in for them: the
// rule stops once the median is pinned, and two runs then agree within 1%. (30% slow samples:
// enough that the first 10 are rarely all quick, which would pass the spread test.)
struct Stream {
  enum Kind { kDrift, kOutliers } kind;
  uint32_t seed;
  std::vector<double> Take(int n) const {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0, 0.004);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<double> out;
    for (int i = 0; i < n; ++i) {
      double v = 1e-3 * (1 + noise(rng));
      if (kind == kDrift) v *= 1 + 0.03 * std::sin(1.3 * i + seed);  // ±3% clock swings
      if (kind == kOutliers && u(rng) < 0.3) v *= 1.3;                // 30% slow samples
      out.push_back(v);
    }
    return out;
  }
};

// Samples until the rule stops (elapsed = 1 ms per sample); returns the samples taken.
std::vector<double> RunUntilStop(const StoppingRule& rule, const Stream& s, StopReason* why) {
  const std::vector<double> all = s.Take(rule.max_samples);
  const Replayed r = ReplayStop(rule, all, 1e-3 * static_cast<double>(all.size()));
  *why = r.why;
  return std::vector<double>(all.begin(), all.begin() + r.samples);
}

TEST(StoppingRule, StopsOnceTheMedianIsPinnedThoughClocksWanderOrOutliersComeBack) {
  StoppingRule rule;
  rule.budget_s = 1.5;
  for (Stream::Kind kind : {Stream::kDrift, Stream::kOutliers}) {
    StopReason why_a = StopReason::kNotYet, why_b = StopReason::kNotYet;
    const std::vector<double> a = RunUntilStop(rule, {kind, 1}, &why_a);
    const std::vector<double> b = RunUntilStop(rule, {kind, 2}, &why_b);
    EXPECT_EQ(why_a, StopReason::kMedianStable) << kind << ": " << DescribeStop(why_a, a, rule);
    EXPECT_EQ(why_b, StopReason::kMedianStable) << kind;
    EXPECT_GT(Summarize(a).relative_spread, rule.target_spread) << kind;  // spread never settles
    EXPECT_LT(a.size(), 1000u) << kind << ": " << DescribeStop(why_a, a, rule);
    // Two runs agree within 1%, and with the median of the whole stream.
    const double ma = Summarize(a).median, mb = Summarize(b).median;
    EXPECT_NEAR(ma / mb, 1, 0.01) << kind;
    EXPECT_NEAR(ma / Summarize(Stream{kind, 1}.Take(2000)).median, 1, 0.01) << kind;
  }
  // Without the criterion the same drifting stream runs to the budget.
  StoppingRule old = rule;
  old.median_precision = 0;
  StopReason why = StopReason::kNotYet;
  EXPECT_GT(RunUntilStop(old, {Stream::kDrift, 1}, &why).size(), 1400u);
  EXPECT_EQ(why, StopReason::kBudget);
}

TEST(StoppingRule, SaysWhatItSaw) {
  StoppingRule rule;
  std::vector<double> quiet(10, 1e-3);
  EXPECT_EQ(rule.Why(quiet, 0.01), StopReason::kSpread);
  EXPECT_EQ(DescribeStop(StopReason::kSpread, quiet, rule),
            "spread at most 1.00% after 10 samples (spread 0.00%, median ±0.00% (95%))");
  StopReason why = StopReason::kNotYet;
  const std::vector<double> drift = RunUntilStop(rule, {Stream::kDrift, 1}, &why);
  EXPECT_THAT(DescribeStop(why, drift, rule),
              ::testing::StartsWith("median stable to ±0.50% after "));
  EXPECT_TRUE(std::isinf(MedianHalfWidth({1, 2, 3})));
}

TEST(StoppingRule, ReplayOfAStreamThatNeverSettlesSaysItWantedMore) {
  StoppingRule rule;
  rule.median_precision = 0;
  std::vector<double> noisy;
  for (int i = 0; i < 50; ++i) noisy.push_back(i % 2 ? 1.0 : 1.1);
  const Replayed r = ReplayStop(rule, noisy, 0.5);  // 50 samples in 0.5 s: the budget is 2 s
  EXPECT_EQ(r.why, StopReason::kNotYet);
  EXPECT_EQ(r.samples, 50);
  EXPECT_EQ(StopReasonName(r.why), "-");
  EXPECT_EQ(ReplayStop(rule, noisy, 5.0).why, StopReason::kBudget);
  EXPECT_EQ(StopReasonName(StopReason::kMedianStable), "median");
}

TEST(LaunchesPerSample, FillsAboutTheTargetWithinBounds) {
  EXPECT_EQ(LaunchesPerSample(20e-6, 1e-3, 1000), 50);  // a 20 us kernel: 50 launches per ms
  EXPECT_EQ(LaunchesPerSample(5e-3, 1e-3, 1000), 1);
  EXPECT_EQ(LaunchesPerSample(1e-9, 1e-3, 1000), 1000);
  EXPECT_EQ(LaunchesPerSample(0, 1e-3, 1000), 1000);
}

TEST(InputSets, CoverThreeTimesL2WhenColdAndFit) {
  const int64_t l2 = 50 << 20;
  EXPECT_EQ(InputSets(6 << 20, l2, int64_t{80} << 30, false), 25);             // ceil(150 / 6)
  EXPECT_EQ(InputSets(1 << 10, l2, int64_t{80} << 30, false), kMaxInputSets);  // capped
  EXPECT_EQ(InputSets(int64_t{1} << 30, l2, int64_t{80} << 30, false), 1);
  EXPECT_EQ(InputSets(6 << 20, l2, 12 << 20, false), 2);  // what fits
  EXPECT_EQ(InputSets(6 << 20, l2, 1 << 20, false), 1);
  EXPECT_EQ(InputSets(6 << 20, l2, int64_t{80} << 30, true), 1);  // warm L2
}

}  // namespace
}  // namespace wavecrest
