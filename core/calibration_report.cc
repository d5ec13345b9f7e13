// The rows of the calibration report (core/calibration_report.h).
#include "core/calibration_report.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace wavecrest::calibration_report {

std::string Pct(double x) { return absl::StrFormat("%.1f%%", 100 * x); }
std::string SignedPct(double x) { return absl::StrFormat("%+.1f%%", 100 * x); }

std::string StatsRow(absl::string_view what, const ErrorStats& e) {
  return absl::StrFormat("  %-44s %5d  %7s  %7s  %7s  %8s\n", what, e.rows, Pct(e.median_abs),
                         Pct(e.p90_abs), Pct(e.max_abs), SignedPct(e.median_signed));
}
std::string PairsRow(absl::string_view what, const std::vector<PairCheck>& pairs) {
  std::vector<double> ratios;
  int within = 0;
  for (const PairCheck& p : pairs) {
    ratios.push_back(p.predicted_ratio / p.measured_ratio);
    within += std::abs(ratios.back() - 1) <= 0.2;
  }
  std::string row = StatsRow(what, ErrorsOf(ratios));
  row.pop_back();  // the newline
  row = absl::StrFormat("%s  (%d of %d within 20%%)\n", row, within, pairs.size());
  // The pairs outside, each with both ratios and its family's measured ratios: where the model's
  // alignment terms miss, and where the measurements themselves scatter past what one
  // prediction can meet.
  int beyond_floor = 0, outside = 0;
  for (const PairCheck& p : pairs) {
    const double error = p.predicted_ratio / p.measured_ratio - 1;
    if (std::abs(error) <= 0.2) continue;
    ++outside;
    const std::vector<double> fam = PairFamilyRatios(pairs, p);
    const double spread = fam.back() / fam.front();
    beyond_floor += spread > 1.5;
    absl::StrAppend(
        &row,
        absl::StrFormat(
            "      outside: %-28s / %-22s measured %5.2fx  predicted %5.2fx  %+.0f%%",
            GemmKeyString(p.misaligned),
            absl::StrFormat("%dx%dx%d", p.aligned.shape.m, p.aligned.shape.n, p.aligned.shape.k),
            p.measured_ratio, p.predicted_ratio, 100 * error),
        fam.size() < 2
            ? std::string("  (no family)\n")
            : absl::StrFormat("  (family of %d: %.2fx-%.2fx, median %.2fx, spread %.2fx%s)\n",
                              fam.size(), fam.front(), fam.back(), fam[fam.size() / 2], spread,
                              spread > 1.5 ? " > 1.5: no one ratio is within 20% of all" : ""));
  }
  if (outside > 0) {
    absl::StrAppend(
        &row, absl::StrFormat("      %d of the %d outside lie in families whose measured ratios "
                              "spread more than 1.5x\n",
                              beyond_floor, outside));
  }
  return row;
}

std::string BandsText(const std::vector<CalibrationInfo::Band>& bands) {
  std::vector<std::string> parts;
  double lo = 0;
  for (const auto& b : bands) {
    parts.push_back(absl::StrFormat(
        "%s: [%s, %s]",
        std::isinf(b.max_time_s) ? absl::StrFormat("> %.0f us", lo * 1e6)
                                 : absl::StrFormat("%.0f-%.0f us", lo * 1e6, b.max_time_s * 1e6),
        SignedPct(b.p10), SignedPct(b.p90)));
    lo = b.max_time_s;
  }
  return absl::StrJoin(parts, "; ");
}

std::string DetailRows(const GpuSpec& before, const GpuSpec& after,
                       const std::vector<Measurement>& rows) {
  std::string out = absl::StrFormat("    %-34s %10s %10s %8s %10s %8s\n", "GEMM (M x N x K)",
                                    "measured", "before", "error", "after", "error");
  for (const Measurement& m : rows) {
    const double f = GemmFlops(m.key.shape);
    const double tb = PredictAsMeasured(before, m), ta = PredictAsMeasured(after, m);
    absl::StrAppend(&out, absl::StrFormat("    %-34s %7.1f TF %7.1f TF %8s %7.1f TF %8s\n",
                                          GemmKeyString(m.key), f / m.median_s / 1e12,
                                          f / tb / 1e12, SignedPct(m.median_s / tb - 1),
                                          f / ta / 1e12, SignedPct(m.median_s / ta - 1)));
  }
  return out;
}

}  // namespace wavecrest::calibration_report
