// What the timing method does with a measurement's samples beyond the stopping rule, as host code
// tested on recorded streams (data/measurements/h200-2026-11-26):
//
// - Clock states: samples taken at different SM clocks are not pooled silently. A run of
//   samples whose clock stepped (1965 -> 1485 MHz within one GEMM, seen on the lent H200) is
//   split into states, and the one holding most of the timed work is kept; the policy says so.
//   A clock that wanders continuously under a power limit (1515-1890 MHz in small steps) is one
//   state: that is how the GPU runs its sustained load.
// - Paired ratios: what Recommend decides on is a ratio of two shapes' times. Timed interleaved
//   (A, B, A, B, ... one block each), drift of clock and power that a block of A and the next
//   block of B share cancels in each block's ratio; the ratio's uncertainty comes from the
//   spread of those per-block ratios, not from the spread of either time.
// - Re-run uncertainty: a measured time's standard deviation as a second run in another process
//   sees it: half its sample spread ((p90 - p10) / median / 2), which covers 93% of the re-run
//   differences of the four recorded H200 sweeps at 1.645 sigma (the 90% two-sided band).
#ifndef WAVECREST_CORE_SAMPLE_POLICIES_H_
#define WAVECREST_CORE_SAMPLE_POLICIES_H_

#include <string>
#include <vector>

namespace wavecrest {

// Clock readings within this relative step of each other are one clock state (continuous DVFS
// under a power limit moves in 15 MHz steps, about 1%).
inline constexpr double kClockStateStep = 0.03;

// One sample and the SM clock while it ran (MHz; 0 unknown).
struct ClockedSample {
  double seconds = 0;
  int mhz = 0;
};

struct ClockStates {
  std::vector<double> samples;  // those kept, in the order taken
  int states = 1;               // clock states seen (unknown clocks are no state)
  int kept_mhz = 0;             // median clock of the kept samples (0 unknown)
  bool separated = false;       // samples of other states were set aside
  // For TimingStats.clock_policy: "one clock state (1980 MHz)", "2 clock states: kept 1965 MHz
  // (240 samples), set aside 1485 MHz (48 samples)", or "clock unknown".
  std::string policy;
};

// Splits the samples by clock state and keeps the state with the most timed work (the sum of
// its samples' seconds); all of them when there is one state or the clock is unknown. A kept
// state with fewer than `min_kept` samples keeps everything (pooled, and said).
ClockStates SeparateClockStates(const std::vector<ClockedSample>& samples, int min_kept = 10);

// A ratio of two things timed interleaved in blocks: a[i] and b[i] are the medians of block i
// of each (taken one after the other).
struct PairedRatio {
  double ratio = 1;        // median of b[i] / a[i]
  double half_width = 0;   // relative half-width of its 95% interval (distribution-free)
  int blocks = 0;
};
PairedRatio PairBlocks(const std::vector<double>& a, const std::vector<double>& b);

// The medians of consecutive blocks of `block` samples (a last short block is dropped).
std::vector<double> BlockMedians(const std::vector<double>& samples, int block);

// A measured time's relative standard deviation across re-runs in other processes (see above).
double RerunSigma(double relative_spread);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_SAMPLE_POLICIES_H_
