// The rows of the calibration report (core/calibration_report.h): percentages, error statistics,
// aligned/misaligned pairs and error bands, as bench/results/calibration.txt prints them.
#include "core/calibration_report.h"

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest::calibration_report {
namespace {

TEST(CalibrationReport, PercentagesHaveOneDecimalAndTheSignedOnesASign) {
  EXPECT_EQ(Pct(0.1234), "12.3%");
  EXPECT_EQ(SignedPct(0.05), "+5.0%");
  EXPECT_EQ(SignedPct(-0.081), "-8.1%");
}

TEST(CalibrationReport, AStatsRowLinesUpUnderItsHeader) {
  ErrorStats e;
  e.rows = 42;
  e.median_abs = 0.05;
  e.p90_abs = 0.12;
  e.max_abs = 0.3;
  e.median_signed = -0.02;
  const std::string row = StatsRow("h100-sxm bf16  cross-validated", e);
  EXPECT_THAT(row, ::testing::StartsWith("  h100-sxm bf16  cross-validated "));
  EXPECT_THAT(row, ::testing::EndsWith("   42     5.0%    12.0%    30.0%     -2.0%\n"));
  // The rows column ends where the header's "rows" does.
  EXPECT_EQ(row.find("42") + 2, kStatsHeader.find("rows") + 4);
}

TEST(CalibrationReport, BandsNameTheirTimeClasses) {
  const std::vector<CalibrationInfo::Band> bands = {
      {20e-6, -0.081, 0.05}, {std::numeric_limits<double>::infinity(), -0.1, 0.2}};
  EXPECT_EQ(BandsText(bands), "0-20 us: [-8.1%, +5.0%]; > 20 us: [-10.0%, +20.0%]");
}

// A pair within 20% of its measured ratio is counted; one outside is listed with its family.
TEST(CalibrationReport, PairsCountThoseWithin20PercentAndListTheOthers) {
  auto pair = [](int64_t n_mis, int64_t n_al, double measured, double predicted) {
    PairCheck p;
    p.misaligned = {{8192, n_mis, 4096, 1}, Layout::kTN, DType::kBf16};
    p.aligned = {{8192, n_al, 4096, 1}, Layout::kTN, DType::kBf16};
    p.measured_ratio = measured;
    p.predicted_ratio = predicted;
    return p;
  };
  const std::vector<PairCheck> pairs = {pair(4082, 4080, 2.0, 2.1), pair(4084, 4080, 2.0, 3.0)};
  const std::string text = PairsRow("pairs", pairs);
  EXPECT_THAT(text, ::testing::HasSubstr("(1 of 2 within 20%)"));
  EXPECT_THAT(text, ::testing::HasSubstr("outside: "));
  EXPECT_THAT(text, ::testing::HasSubstr("measured  2.00x  predicted  3.00x  +50%"));
  EXPECT_THAT(text, ::testing::HasSubstr("(family of 2: 2.00x-2.00x"));
  EXPECT_THAT(text, ::testing::HasSubstr("0 of the 1 outside lie in families"));
}

}  // namespace
}  // namespace wavecrest::calibration_report
