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

namespace {

constexpr double kW = 860, kH = 440, kLeft = 70, kRight = 20, kTop = 40, kBottom = 55;

// The plot area and its scales: x the swept value, y TFLOP/s from 0.
struct Plot {
  double x_lo = 0, x_hi = 1, y_hi = 1;
  double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  double X(double v) const { return kLeft + (v - x_lo) / (x_hi - x_lo) * pw; }
  double Y(double v) const { return kTop + ph - v / y_hi * ph; }
};

Plot ScalesFor(const std::vector<const v1::SweepPoint*>& pts) {
  Plot p;
  p.x_lo = static_cast<double>(pts.front()->value());
  p.x_hi = p.x_lo;
  p.y_hi = 0;
  for (const v1::SweepPoint* q : pts) {
    p.x_lo = std::min(p.x_lo, static_cast<double>(q->value()));
    p.x_hi = std::max(p.x_hi, static_cast<double>(q->value()));
    p.y_hi = std::max(p.y_hi, q->tflops() / (1 + std::min(0.0, q->error_band_p10())));
  }
  if (p.x_hi == p.x_lo) p.x_hi = p.x_lo + 1;
  p.y_hi *= 1.08;
  return p;
}

// Axes, grid, ticks and their labels.
void AppendAxes(const Plot& p, absl::string_view dimension, absl::string_view gpu,
                std::string* svg) {
  absl::StrAppend(svg,
                  absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                  "fill=\"none\" stroke=\"#444\"/>\n",
                                  kLeft, kTop, p.pw, p.ph));
  for (double t : NiceTicks(0, p.y_hi, 6)) {
    absl::StrAppend(svg, absl::StrFormat("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                                         "stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                                         "text-anchor=\"end\">%s</text>\n",
                                         kLeft, kLeft + p.pw, p.Y(t), p.Y(t), kLeft - 6,
                                         p.Y(t) + 4, Label(t)));
  }
  for (double t : NiceTicks(p.x_lo, p.x_hi, 8)) {
    absl::StrAppend(svg, absl::StrFormat("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                                         "stroke=\"#444\"/><text x=\"%.1f\" y=\"%.1f\" "
                                         "text-anchor=\"middle\">%s</text>\n",
                                         p.X(t), p.X(t), kTop + p.ph, kTop + p.ph + 5, p.X(t),
                                         kTop + p.ph + 19, Label(t)));
  }
  absl::StrAppend(svg,
                  absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                  kLeft + p.pw / 2, kH - 12, Escape(dimension)),
                  absl::StrFormat("<text transform=\"translate(16 %.1f) rotate(-90)\" "
                                  "text-anchor=\"middle\">TFLOP/s per GPU (%s)</text>\n",
                                  kTop + p.ph / 2, Escape(gpu)));
}

// The predicted points' p10-p90 band, shaded.
void AppendBand(const Plot& p, const std::vector<const v1::SweepPoint*>& pts, std::string* svg) {
  std::vector<std::string> upper, lower;
  for (const v1::SweepPoint* q : pts) {
    if (q->source() != v1::SOURCE_PREDICTED) continue;
    upper.push_back(absl::StrFormat("%.1f,%.1f", p.X(q->value()),
                                    p.Y(q->tflops() / (1 + q->error_band_p10()))));
    lower.push_back(absl::StrFormat("%.1f,%.1f", p.X(q->value()),
                                    p.Y(q->tflops() / (1 + q->error_band_p90()))));
  }
  if (upper.size() <= 1) return;
  std::reverse(lower.begin(), lower.end());
  absl::StrAppend(svg,
                  "<polygon class=\"band\" fill=\"#1f77b4\" fill-opacity=\"0.12\" "
                  "stroke=\"none\" points=\"",
                  absl::StrJoin(upper, " "), " ", absl::StrJoin(lower, " "), "\"/>\n");
}

// The line through consecutive legal points (a gap where a point is not legal).
void AppendCurve(const Plot& p, const v1::SweepResponse& r, std::string* svg) {
  std::vector<std::string> segment;
  auto flush = [&] {
    if (segment.size() > 1) {
      absl::StrAppend(svg,
                      "<polyline class=\"curve\" fill=\"none\" stroke=\"#1f77b4\" "
                      "stroke-width=\"1.5\" points=\"",
                      absl::StrJoin(segment, " "), "\"/>\n");
    }
    segment.clear();
  };
  for (const v1::SweepPoint& q : r.points()) {
    if (!q.valid() || !(q.tflops() > 0)) {
      flush();
      continue;
    }
    segment.push_back(absl::StrFormat("%.1f,%.1f", p.X(q.value()), p.Y(q.tflops())));
  }
  flush();
}

// A marker per legal point: filled where every rule holds, hollow where one breaks.
void AppendMarkers(const Plot& p, const std::vector<const v1::SweepPoint*>& pts,
                   absl::string_view dimension, std::string* svg) {
  for (const v1::SweepPoint* q : pts) {
    const bool clean = q->rules_broken().empty();
    absl::StrAppend(
        svg,
        absl::StrFormat(
            "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" "
            "stroke=\"#1f77b4\"><title>%s = %d: %.1f TFLOP/s%s</title></circle>\n",
            clean ? "rules-hold" : "rules-broken", p.X(q->value()), p.Y(q->tflops()),
            clean ? "#1f77b4" : "white", Escape(dimension), q->value(), q->tflops(),
            clean ? ""
                  : Escape(absl::StrCat("; breaks ", absl::StrJoin(q->rules_broken(), ", ")))));
  }
}

}  // namespace

std::string SweepSvg(const v1::SweepResponse& r, absl::string_view dimension,
                     absl::string_view title) {
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
  const Plot plot = ScalesFor(pts);
  AppendAxes(plot, dimension, r.gpu(), &svg);
  AppendBand(plot, pts, &svg);
  AppendCurve(plot, r, &svg);
  AppendMarkers(plot, pts, dimension, &svg);
  absl::StrAppend(
      &svg,
      absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">filled: every rule holds; "
                      "hollow: breaks a rule; shaded: predicted p10-p90</text>\n",
                      kLeft + 8, kTop + 14),
      "</svg>\n");
  return svg;
}

}  // namespace wavecrest
