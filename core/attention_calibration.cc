#include "core/attention_calibration.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/cost_model.h"
#include "core/csv_fields.h"
#include "core/status_macros.h"

namespace wavecrest {
namespace {

using csv::Dim;
using csv::LineError;
using csv::Positive;

absl::StatusOr<AttentionMeasurement> ParseRow(absl::string_view origin, int line,
                                              const std::vector<std::string>& f) {
  RETURN_IF_ERROR(csv::FieldCount(origin, line, f, 13));
  AttentionMeasurement m;
  m.source = f[0];
  ASSIGN_OR_RETURN(m.gpu, csv::GpuField(origin, line, f[1]));
  ASSIGN_OR_RETURN(m.dtype, csv::DTypeField(origin, line, f[2]));
  if (f[3] == "forward") {
    m.pass = Pass::kForward;
  } else if (f[3] == "backward") {
    m.pass = Pass::kBackward;
  } else {
    return LineError(origin, line,
                     absl::StrCat("pass: \"", f[3], "\"; allowed: forward, backward"));
  }
  if (f[4] != "true" && f[4] != "false") {
    return LineError(origin, line, absl::StrCat("causal: \"", f[4], "\"; allowed: true, false"));
  }
  m.causal = f[4] == "true";
  ASSIGN_OR_RETURN(m.batch, Dim(origin, line, "batch", f[5], 1));
  ASSIGN_OR_RETURN(m.heads, Dim(origin, line, "heads", f[6], 1));
  ASSIGN_OR_RETURN(m.seq, Dim(origin, line, "seq", f[7], 1));
  ASSIGN_OR_RETURN(m.head_dim, Dim(origin, line, "head_dim", f[8], 1));
  ASSIGN_OR_RETURN(const double tflops, Positive(origin, line, "tflops", f[9]));
  ASSIGN_OR_RETURN(m.median_s, Positive(origin, line, "median_s", f[10]));
  const double implied = AttentionWorkFlops(m) / (tflops * 1e12);
  if (std::abs(implied / m.median_s - 1) > 0.01) {
    return LineError(origin, line,
                     absl::StrCat("median_s ", m.median_s, " disagrees with tflops ", tflops,
                                  " (FLOPs / tflops = ", implied, " s)"));
  }
  m.method = f[11];
  m.device = f[12];
  return m;
}

double AttentionLoss(const GpuSpec& gpu, const std::vector<AttentionMeasurement>& rows) {
  double sum = 0;
  for (const AttentionMeasurement& m : rows) {
    const double e = std::log(Predict(gpu, AttentionGemm(m)).time_s / m.median_s);
    sum += e * e;
  }
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

// The attention constants of the model before it was calibrated (cost model v2's priors: full
// work under a causal mask, the fraction scaled by d/128, no per-block overhead). Every fit starts
// here, so that no fit (a cross-validation fold least of all) starts from constants fitted to the
// rows it is judged on.
void Uncalibrated(CostModelParams& p) {
  p.flash_forward_fraction = 0.60;
  p.flash_backward_fraction = 0.45;
  p.flash_head_dim_exponent = p.flash_backward_head_dim_exponent = 1.0;
  p.flash_block_overhead = 0;
  p.flash_causal_efficiency = 1.0;
}

CostModelParams Fit(const GpuSpec& prior, DType dtype,
                    const std::vector<AttentionMeasurement>& rows, const FitOptions& options) {
  GpuSpec start = prior;
  Uncalibrated(start.Model(dtype));
  return FitFields(
      start, dtype, AttentionFittedParams(),
      [&](const GpuSpec& g) { return AttentionLoss(g, rows); }, options);
}

}  // namespace

absl::StatusOr<std::vector<AttentionMeasurement>> ParseAttentionCsv(absl::string_view text,
                                                                    absl::string_view origin) {
  std::string header;
  const auto rows = csv::CsvRows(text, &header);
  if (header != kAttentionHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": header must be \"", kAttentionHeader, "\""));
  }
  std::vector<AttentionMeasurement> out;
  for (const auto& [line, fields] : rows) {
    ASSIGN_OR_RETURN(AttentionMeasurement m, ParseRow(origin, line, fields));
    out.push_back(std::move(m));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(origin, ": no rows"));
  return out;
}

absl::StatusOr<std::vector<AttentionMeasurement>> ReadAttentionFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, csv::ReadSmallFile(path));
  return ParseAttentionCsv(text, path);
}

double AttentionWorkFlops(const AttentionMeasurement& row) {
  const double s = static_cast<double>(row.seq);
  double f = 4.0 * static_cast<double>(row.batch) * static_cast<double>(row.heads) * s * s *
             static_cast<double>(row.head_dim);
  if (row.causal) f /= 2;
  if (row.pass == Pass::kBackward) f *= 2.5;
  return f;
}

Gemm AttentionGemm(const AttentionMeasurement& row) {
  Gemm g;
  g.name = "attention";
  g.pass = row.pass;
  g.shape = {row.seq, row.seq, row.head_dim, row.batch * row.heads};
  g.dtype = row.dtype;
  g.fused_attention = true;
  g.kv_batch = row.batch * row.heads;
  g.causal = row.causal;
  g.flops = (row.pass == Pass::kForward ? 2.0 : 5.0) * GemmFlops(g.shape);
  return g;
}

std::string AttentionSeries(const AttentionMeasurement& row) {
  return absl::StrCat(PassName(row.pass), row.causal ? " causal" : "", " d", row.head_dim);
}

const std::vector<FittedParam>& AttentionFittedParams() {
  static const std::vector<FittedParam>* p = new std::vector<FittedParam>{
      {"flash_forward_fraction", &CostModelParams::flash_forward_fraction, 0.05, 1.5},
      {"flash_backward_fraction", &CostModelParams::flash_backward_fraction, 0.05, 1.5},
      {"flash_head_dim_exponent", &CostModelParams::flash_head_dim_exponent, 0.0, 2.0},
      {"flash_backward_head_dim_exponent", &CostModelParams::flash_backward_head_dim_exponent, 0.0,
       2.0},
      {"flash_block_overhead", &CostModelParams::flash_block_overhead, 0.0, 8.0},
      {"flash_causal_efficiency", &CostModelParams::flash_causal_efficiency, 0.3, 1.2},
  };
  return *p;
}

std::vector<double> AttentionRatios(const GpuSpec& gpu,
                                    const std::vector<AttentionMeasurement>& rows) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const AttentionMeasurement& m : rows) {
    out.push_back(m.median_s / Predict(gpu, AttentionGemm(m)).time_s);
  }
  return out;
}

AttentionFit FitAttention(const GpuSpec& prior, DType dtype,
                          const std::vector<AttentionMeasurement>& rows,
                          const FitOptions& options) {
  AttentionFit r;
  r.gpu = prior.name;
  r.dtype = dtype;
  r.rows = static_cast<int64_t>(rows.size());
  std::vector<AttentionMeasurement> data = rows;
  for (AttentionMeasurement& m : data) m.dtype = dtype;  // FP16 rows are fitted as BF16
  // Leave-one-group-out: each group predicted by a fit to the rest.
  auto cross_validate = [&](const std::function<std::string(const AttentionMeasurement&)>& group,
                            std::vector<std::pair<std::string, ErrorStats>>* by_group) {
    std::set<std::string> groups;
    for (const AttentionMeasurement& m : data) groups.insert(group(m));
    std::vector<double> all;
    for (const std::string& name : groups) {
      std::vector<AttentionMeasurement> train, test;
      for (const AttentionMeasurement& m : data) (group(m) == name ? test : train).push_back(m);
      if (train.empty()) continue;
      GpuSpec fold = prior;
      fold.Model(dtype) = Fit(prior, dtype, train, options);
      const std::vector<double> ratios = AttentionRatios(fold, test);
      if (by_group != nullptr) by_group->push_back({name, ErrorsOf(ratios)});
      all.insert(all.end(), ratios.begin(), ratios.end());
    }
    return ErrorsOf(all);
  };
  r.cv = cross_validate([](const AttentionMeasurement& m) { return absl::StrCat("s", m.seq); },
                        nullptr);
  r.cv_series = cross_validate(AttentionSeries, &r.cv_by_series);
  GpuSpec fitted = prior;
  fitted.Model(dtype) = Fit(prior, dtype, data, options);
  r.params = fitted.Model(dtype);
  r.train = ErrorsOf(AttentionRatios(fitted, data));
  return r;
}

namespace {

std::string Stats(const ErrorStats& e) {
  return absl::StrFormat("median |err| %5.1f%%, p90 %5.1f%%, max %5.1f%% (%d rows)",
                         100 * e.median_abs, 100 * e.p90_abs, 100 * e.max_abs, e.rows);
}

// The model before this calibration: the full product's work under a causal mask, the fraction
// scaled by d/128, no per-block overhead, forward 0.60 and backward 0.45 of peak.
ErrorStats PreviousModel(const GpuSpec& gpu, DType dtype,
                         const std::vector<AttentionMeasurement>& rows) {
  GpuSpec old = gpu;
  Uncalibrated(old.Model(dtype));
  std::vector<double> ratios;
  for (AttentionMeasurement m : rows) {
    m.causal = false;  // it priced the full product
    ratios.push_back(m.median_s / Predict(old, AttentionGemm(m)).time_s);
  }
  return ErrorsOf(ratios);
}

}  // namespace

bool AttentionFitApplies(absl::string_view fit_gpu, absl::string_view gpu) {
  return gpu == fit_gpu || (fit_gpu == "h100-sxm" && gpu == "h200");
}

namespace {

const GpuSpec* FindIn(const std::vector<GpuSpec>& catalog, const std::string& name) {
  for (const GpuSpec& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The per-row lines of the report: series, seq, (heads,) measured and predicted TFLOP/s, error.
void AppendRowLines(const GpuSpec& gpu, const std::vector<AttentionMeasurement>& group,
                    bool with_heads, std::string* out) {
  for (const AttentionMeasurement& m : group) {
    const double t = Predict(gpu, AttentionGemm(m)).time_s;
    const double f = AttentionWorkFlops(m);
    absl::StrAppend(out, absl::StrFormat("    %-22s %6d", AttentionSeries(m), m.seq),
                    with_heads ? absl::StrFormat(" %4d", m.heads) : "",
                    absl::StrFormat(" %7.0f %7.0f %+6.1f%%\n", f / m.median_s / 1e12,
                                    f / t / 1e12, 100 * (m.median_s / t - 1)));
  }
}

// Widens a fitted group's band by the held-out checks of the GPUs the fit applies to, and adds
// the bands of GPUs that take an H100 fit as their priors to `result`.
void WidenByChecks(const std::vector<GpuSpec>& catalog, const std::string& fit_gpu, DType dtype,
                   const std::vector<AttentionMeasurement>& checks, AttentionCalibration::Group& g,
                   AttentionCalibration& result) {
  std::map<std::string, std::vector<AttentionMeasurement>> held_out;
  for (const AttentionMeasurement& m : checks) {
    if (FitClass(m.dtype) == dtype) held_out[m.gpu].push_back(m);
  }
  std::vector<std::pair<std::string, ErrorStats>> priors;  // checks of GPUs on priors
  for (const auto& [name, check_rows] : held_out) {
    const GpuSpec* check_gpu = FindIn(catalog, name);
    if (check_gpu == nullptr) continue;
    GpuSpec with_fit = *check_gpu;
    for (const FittedParam& f : AttentionFittedParams()) {
      with_fit.Model(dtype).*(f.field) = g.fit.params.*(f.field);
    }
    const ErrorStats st = ErrorsOf(AttentionRatios(with_fit, check_rows));
    if (AttentionFitApplies(fit_gpu, name)) {
      g.band_p10 = std::min(g.band_p10, st.p10);
      g.band_p90 = std::max(g.band_p90, st.p90);
    } else if (fit_gpu == "h100-sxm") {
      priors.push_back({name, st});
    }
  }
  for (const auto& [name, st] : priors) {
    result.prior_bands.push_back(
        {name, dtype, std::min(g.band_p10, st.p10), std::max(g.band_p90, st.p90)});
  }
}

// One fitted group's section of the report.
void AppendGroupReport(const std::vector<GpuSpec>& catalog, const GpuSpec& gpu, DType dtype,
                       const std::vector<AttentionMeasurement>& group,
                       const AttentionCalibration::Group& g, const AttentionCalibration& result,
                       std::string* out) {
  const AttentionFit& fit = g.fit;
  std::set<std::string> sources;
  for (const AttentionMeasurement& m : group) sources.insert(m.source);
  const CostModelParams& have = gpu.Model(dtype);
  absl::StrAppend(out, "\n", gpu.name, " ", DTypeName(dtype), ": ", group.size(), " rows (",
                  absl::StrJoin(sources, ", "), ")\n");
  absl::StrAppend(out, "  model before this calibration   ",
                  Stats(PreviousModel(gpu, dtype, group)), "\n");
  absl::StrAppend(out, "  fit, on the rows it was fit to  ", Stats(fit.train), "\n");
  absl::StrAppend(out, "  fit, each length left out       ", Stats(fit.cv), "\n");
  absl::StrAppend(out, "  fit, each series left out       ", Stats(fit.cv_series), "\n");
  absl::StrAppend(out, "  the catalog's constants         ",
                  Stats(ErrorsOf(AttentionRatios(gpu, group))), "\n");
  absl::StrAppend(out, absl::StrFormat("  band (length left out: p10, p90) %+5.1f%% %+5.1f%%; "
                                       "with the held-out checks %+5.1f%% %+5.1f%%; "
                                       "catalog %+5.1f%% %+5.1f%%\n",
                                       100 * fit.cv.p10, 100 * fit.cv.p90, 100 * g.band_p10,
                                       100 * g.band_p90, 100 * have.flash_band_p10,
                                       100 * have.flash_band_p90));
  for (const AttentionCalibration::PriorBand& b : result.prior_bands) {
    if (b.dtype != dtype || gpu.name != "h100-sxm") continue;
    const CostModelParams& prior = FindIn(catalog, b.gpu)->Model(dtype);
    absl::StrAppend(out, absl::StrFormat("  %s (these constants as priors): band with its "
                                         "held-out checks %+5.1f%% %+5.1f%%; catalog "
                                         "%+5.1f%% %+5.1f%%\n",
                                         b.gpu, 100 * b.band_p10, 100 * b.band_p90,
                                         100 * prior.flash_band_p10, 100 * prior.flash_band_p90));
  }
  absl::StrAppend(out, "  parameter                          fit    catalog\n");
  for (const FittedParam& f : AttentionFittedParams()) {
    absl::StrAppend(out, absl::StrFormat("  %-32s %8.4f %8.4f\n", f.name, fit.params.*(f.field),
                                         have.*(f.field)));
  }
  absl::StrAppend(out, "  series left out (fitted to the others): median |err|, max\n");
  for (const auto& [name, st] : fit.cv_by_series) {
    absl::StrAppend(out, absl::StrFormat("    %-22s %5.1f%% %5.1f%%\n", name, 100 * st.median_abs,
                                         100 * st.max_abs));
  }
  absl::StrAppend(out,
                  "  rows (catalog constants): series, seq, measured TFLOP/s, predicted, error\n");
  AppendRowLines(gpu, group, false, out);
}

// The held-out checks' section: each source on each GPU, with the catalog's constants.
void AppendChecksReport(const std::vector<GpuSpec>& catalog,
                        const std::vector<AttentionMeasurement>& checks, std::string* out) {
  if (checks.empty()) return;
  absl::StrAppend(out,
                  "\nHeld-out checks (never fitted; the catalog's constants): series, seq, "
                  "heads, measured TFLOP/s, predicted, error\n");
  std::map<std::string, std::vector<AttentionMeasurement>> by_source;
  for (const AttentionMeasurement& m : checks) by_source[m.source + " " + m.gpu].push_back(m);
  for (const auto& [name, group] : by_source) {
    const GpuSpec* gpu = FindIn(catalog, group.front().gpu);
    if (gpu == nullptr) continue;
    const ErrorStats st = ErrorsOf(AttentionRatios(*gpu, group));
    absl::StrAppend(out, "  ", name, ": ", Stats(st),
                    absl::StrFormat("; p10 %+5.1f%%, p90 %+5.1f%%\n", 100 * st.p10, 100 * st.p90));
    AppendRowLines(*gpu, group, true, out);
  }
}

}  // namespace

AttentionCalibration CalibrateAttention(const std::vector<GpuSpec>& catalog,
                                        const std::vector<AttentionMeasurement>& rows,
                                        const std::vector<AttentionMeasurement>& checks,
                                        const FitOptions& options) {
  std::map<std::pair<std::string, DType>, std::vector<AttentionMeasurement>> groups;
  for (const AttentionMeasurement& m : rows) groups[{m.gpu, FitClass(m.dtype)}].push_back(m);
  AttentionCalibration result;
  result.report = absl::StrCat(
      "Fused attention: cost_model.cc PredictFusedAttention against published kernel times\n",
      "(error = measured / predicted time - 1; a group \"left out\" is predicted by a fit to the "
      "other rows only; every fit starts from the uncalibrated constants)\n");
  for (const auto& [key, group] : groups) {
    const GpuSpec* gpu = FindIn(catalog, key.first);
    if (gpu == nullptr || !gpu->Supports(key.second)) continue;
    const DType dtype = key.second;
    AttentionCalibration::Group g{FitAttention(*gpu, dtype, group, options)};
    g.band_p10 = g.fit.cv.p10;
    g.band_p90 = g.fit.cv.p90;
    WidenByChecks(catalog, key.first, dtype, checks, g, result);
    std::string section;
    AppendGroupReport(catalog, *gpu, dtype, group, g, result, &section);
    result.report += section;
    result.groups.push_back(std::move(g));
  }
  AppendChecksReport(catalog, checks, &result.report);
  return result;
}

}  // namespace wavecrest
