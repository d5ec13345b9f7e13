#include "client/svg.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace wavecrest {
namespace {

std::string Escape(absl::string_view s) {
  return absl::StrReplaceAll(s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string Label(double v) {
  if (std::fabs(v) >= 1e4 || (v != 0 && std::fabs(v) < 1e-2)) return absl::StrFormat("%.3g", v);
  return absl::StrFormat("%g", v);
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || target < 1) {
    ticks.push_back(lo);
    return ticks;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

std::string SweepSvg(const v1::SweepResponse& r, absl::string_view dimension,
                     absl::string_view title) {
  constexpr double kW = 860, kH = 440, kLeft = 70, kRight = 20, kTop = 40, kBottom = 55;
  std::vector<const v1::SweepPoint*> pts;
  for (const v1::SweepPoint& p : r.points()) {
    if (p.valid() && p.tflops() > 0 && std::isfinite(p.tflops())) pts.push_back(&p);
  }
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n",
      kW, kH, kW, kH, kLeft, Escape(title));
  if (pts.empty()) {
    absl::StrAppend(&svg, "<text x=\"", kLeft, "\" y=\"", kH / 2,
                    "\">no legal point to plot</text>\n</svg>\n");
    return svg;
  }
  double x_lo = static_cast<double>(pts.front()->value()), x_hi = x_lo, y_hi = 0;
  for (const v1::SweepPoint* p : pts) {
    x_lo = std::min(x_lo, static_cast<double>(p->value()));
    x_hi = std::max(x_hi, static_cast<double>(p->value()));
    y_hi = std::max(y_hi, p->tflops() / (1 + std::min(0.0, p->error_band_p10())));
  }
  if (x_hi == x_lo) x_hi = x_lo + 1;
  y_hi *= 1.08;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto X = [&](double v) { return kLeft + (v - x_lo) / (x_hi - x_lo) * pw; };
  auto Y = [&](double v) { return kTop + ph - v / y_hi * ph; };
  // Axes, grid and ticks.
  absl::StrAppend(&svg,
                  absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                  "fill=\"none\" stroke=\"#444\"/>\n",
                                  kLeft, kTop, pw, ph));
  for (double t : NiceTicks(0, y_hi, 6)) {
    absl::StrAppend(&svg,
                    absl::StrFormat("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                                    "stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                                    "text-anchor=\"end\">%s</text>\n",
                                    kLeft, kLeft + pw, Y(t), Y(t), kLeft - 6, Y(t) + 4, Label(t)));
  }
  for (double t : NiceTicks(x_lo, x_hi, 8)) {
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                                          "stroke=\"#444\"/><text x=\"%.1f\" y=\"%.1f\" "
                                          "text-anchor=\"middle\">%s</text>\n",
                                          X(t), X(t), kTop + ph, kTop + ph + 5, X(t),
                                          kTop + ph + 19, Label(t)));
  }
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                  kLeft + pw / 2, kH - 12, Escape(dimension)),
                  absl::StrFormat("<text transform=\"translate(16 %.1f) rotate(-90)\" "
                                  "text-anchor=\"middle\">TFLOP/s per GPU (%s)</text>\n",
                                  kTop + ph / 2, Escape(r.gpu())));
  // The predicted band, then the line through consecutive legal points (a gap where a point is
  // not legal), then the markers.
  std::vector<std::string> upper, lower;
  for (const v1::SweepPoint* p : pts) {
    if (p->source() != v1::SOURCE_PREDICTED) continue;
    upper.push_back(
        absl::StrFormat("%.1f,%.1f", X(p->value()), Y(p->tflops() / (1 + p->error_band_p10()))));
    lower.push_back(
        absl::StrFormat("%.1f,%.1f", X(p->value()), Y(p->tflops() / (1 + p->error_band_p90()))));
  }
  if (upper.size() > 1) {
    std::reverse(lower.begin(), lower.end());
    absl::StrAppend(&svg,
                    "<polygon class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.12\" "
                    "stroke=\"none\" points=\"",
                    absl::StrJoin(upper, " "), " ", absl::StrJoin(lower, " "), "\"/>\n");
  }
  std::vector<std::string> segment;
  auto flush = [&] {
    if (segment.size() > 1) {
      absl::StrAppend(&svg,
                      "<polyline class=\"curve\" fill=\"none\" stroke=\"#1f77b4\" "
                      "stroke-width=\"1.5\" points=\"",
                      absl::StrJoin(segment, " "), "\"/>\n");
    }
    segment.clear();
  };
  for (const v1::SweepPoint& p : r.points()) {
    if (!p.valid() || !(p.tflops() > 0)) {
      flush();
      continue;
    }
    segment.push_back(absl::StrFormat("%.1f,%.1f", X(p.value()), Y(p.tflops())));
  }
  flush();
  for (const v1::SweepPoint* p : pts) {
    const bool clean = p->rules_broken().empty();
    absl::StrAppend(
        &svg,
        absl::StrFormat(
            "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" "
            "stroke=\"#1f77b4\"><title>%s = %d: %.1f TFLOP/s%s</title></circle>\n",
            clean ? "rules-hold" : "rules-broken", X(p->value()), Y(p->tflops()),
            clean ? "#1f77b4" : "white", Escape(dimension), p->value(), p->tflops(),
            clean ? ""
                  : Escape(absl::StrCat("; breaks ", absl::StrJoin(p->rules_broken(), ", ")))));
  }
  absl::StrAppend(
      &svg,
      absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">filled: every rule holds; "
                      "hollow: breaks a rule; shaded: predicted p10-p90</text>\n",
                      kLeft + 8, kTop + 14),
      "</svg>\n");
  return svg;
}

}  // namespace wavecrest
