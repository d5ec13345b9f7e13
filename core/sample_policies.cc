#include "core/sample_policies.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/timing_stats.h"

namespace wavecrest {

namespace {

// The states of the samples' known clocks: the distinct clocks, split where one is more than
// kClockStateStep above the last; each clock (MHz) mapped to its state's index. Empty when no
// sample's clock is known.
std::map<int, int> ClockStatesOf(const std::vector<ClockedSample>& samples) {
  std::vector<int> known;
  for (const ClockedSample& s : samples) {
    if (s.mhz > 0) known.push_back(s.mhz);
  }
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  std::map<int, int> state_of;  // MHz -> state index
  int state = 0;
  for (size_t i = 0; i < known.size(); ++i) {
    if (i > 0 && known[i] > known[i - 1] * (1 + kClockStateStep)) ++state;
    state_of[known[i]] = state;
  }
  return state_of;
}

// The median clock of the samples in state `which`, in MHz.
int64_t MedianMhz(const std::vector<ClockedSample>& samples, const std::map<int, int>& state_of,
                  int which) {
  std::vector<double> mhz;
  for (const ClockedSample& s : samples) {
    if (s.mhz > 0 && state_of.at(s.mhz) == which) mhz.push_back(s.mhz);
  }
  return static_cast<int64_t>(std::lround(Percentile(mhz, 0.5)));
}

}  // namespace

ClockStates SeparateClockStates(const std::vector<ClockedSample>& samples, int min_kept) {
  ClockStates out;
  for (const ClockedSample& s : samples) out.samples.push_back(s.seconds);
  const std::map<int, int> state_of = ClockStatesOf(samples);
  if (state_of.empty()) {
    out.states = 0;
    out.policy = "clock unknown";
    return out;
  }
  out.states = state_of.rbegin()->second + 1;
  if (out.states == 1) {
    out.kept_mhz = static_cast<int>(MedianMhz(samples, state_of, 0));
    out.policy = absl::StrCat("one clock state (", out.kept_mhz, " MHz)");
    return out;
  }
  // The state with the most timed work; a sample of unknown clock goes with none.
  std::vector<double> work(out.states, 0);
  std::vector<int> count(out.states, 0);
  for (const ClockedSample& s : samples) {
    if (s.mhz <= 0) continue;
    work[state_of.at(s.mhz)] += s.seconds;
    ++count[state_of.at(s.mhz)];
  }
  const int keep = static_cast<int>(std::max_element(work.begin(), work.end()) - work.begin());
  std::vector<std::string> aside;
  for (int st = 0; st < out.states; ++st) {
    if (st == keep) continue;
    aside.push_back(
        absl::StrCat(MedianMhz(samples, state_of, st), " MHz (", count[st], " samples)"));
  }
  out.kept_mhz = static_cast<int>(MedianMhz(samples, state_of, keep));
  if (count[keep] < min_kept) {
    out.policy = absl::StrCat(out.states, " clock states, none with ", min_kept,
                              " samples: pooled (", out.kept_mhz, " MHz the most)");
    return out;
  }
  out.samples.clear();
  for (const ClockedSample& s : samples) {
    if (s.mhz > 0 && state_of.at(s.mhz) == keep) out.samples.push_back(s.seconds);
  }
  out.separated = true;
  out.policy = absl::StrCat(out.states, " clock states: kept ", out.kept_mhz, " MHz (",
                            count[keep], " samples), set aside ", absl::StrJoin(aside, ", "));
  return out;
}

std::vector<double> BlockMedians(const std::vector<double>& samples, int block) {
  std::vector<double> out;
  if (block < 1) return out;
  for (size_t i = 0; i + static_cast<size_t>(block) <= samples.size();
       i += static_cast<size_t>(block)) {
    out.push_back(Percentile(std::vector<double>(samples.begin() + static_cast<std::ptrdiff_t>(i),
                                                 samples.begin() + static_cast<std::ptrdiff_t>(i) +
                                                     block),
                             0.5));
  }
  return out;
}

PairedRatio PairBlocks(const std::vector<double>& a, const std::vector<double>& b) {
  PairedRatio p;
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] > 0 && b[i] > 0) ratios.push_back(b[i] / a[i]);
  }
  p.blocks = static_cast<int>(ratios.size());
  if (ratios.empty()) return p;
  p.ratio = Percentile(ratios, 0.5);
  p.half_width = MedianHalfWidth(ratios);
  return p;
}

double RerunSigma(double relative_spread) { return std::max(0.0, relative_spread) / 2; }

}  // namespace wavecrest
