// The text of `wavecrest calibrate`'s report (bench/results/calibration.txt), row by row: error
// statistics, aligned/misaligned pairs, error bands and per-row details. core/calibrate.cc
// assembles the report from them; nothing here fits or predicts beyond what it prints.
#ifndef WAVECREST_CORE_CALIBRATION_REPORT_H_
#define WAVECREST_CORE_CALIBRATION_REPORT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/calibration.h"
#include "core/gpu_catalog.h"

namespace wavecrest::calibration_report {

// A fraction as a percentage: "12.3%", and with its sign: "+12.3%".
std::string Pct(double x);
std::string SignedPct(double x);

// The header of a table of StatsRow rows.
inline constexpr absl::string_view kStatsHeader =
    "  what                                          rows   median      p90      max  signed*\n";

// One table row: what, the rows, median, p90 and max of |error| and the median signed error.
std::string StatsRow(absl::string_view what, const ErrorStats& e);

// Aligned/misaligned pairs as errors of the predicted ratio and how many are within 20% of the
// measured one, then each pair outside with its family's measured ratios.
std::string PairsRow(absl::string_view what, const std::vector<PairCheck>& pairs);

// Error bands by predicted time: "0-20 us: [-8.1%, +5.0%]; > 20 us: [...]".
std::string BandsText(const std::vector<CalibrationInfo::Band>& bands);

// Per-row detail of a small check set: measured throughput and each GPU's predicted one, before
// and after the calibration.
std::string DetailRows(const GpuSpec& before, const GpuSpec& after,
                       const std::vector<Measurement>& rows);

}  // namespace wavecrest::calibration_report

#endif  // WAVECREST_CORE_CALIBRATION_REPORT_H_
