#include "core/timing_stats.h"

#include <vector>

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
