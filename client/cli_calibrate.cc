// `wavecrest calibrate`: fit the cost model to measurement files, cross-validate and report
// (--out writes the calibration file); --evaluate scores the current calibration on files.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli_commands.h"
#include "core/attention_calibration.h"
#include "core/calibrate.h"
#include "core/calibration.h"
#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "nlohmann/json.hpp"
#include "service/errors.h"
#include "service/text.h"

namespace wavecrest {
namespace cli {
namespace {

// The rows of one source, GPU and dtype, measured over predicted.
struct EvaluationGroup {
  std::vector<double> ratios, aligned, misaligned, predicted_s;
  std::vector<Measurement> rows;
};

nlohmann::json ErrorStatsJson(const ErrorStats& e) {
  return nlohmann::json{{"rows", e.rows},
                        {"median_abs", e.median_abs},
                        {"p90_abs", e.p90_abs},
                        {"max_abs", e.max_abs},
                        {"median_signed", e.median_signed}};
}

// Pairs whose predicted ratio is within 20% of the measured one.
int PairsWithin20(const std::vector<PairCheck>& pairs) {
  int n = 0;
  for (const PairCheck& p : pairs) n += std::abs(p.predicted_ratio / p.measured_ratio - 1) <= 0.2;
  return n;
}

void WriteEvaluationJson(const std::map<std::string, EvaluationGroup>& groups,
                         const nlohmann::json& rows, std::ostream& out) {
  nlohmann::json j;
  j["model"] = std::string(kCostModelName);
  j["rows"] = rows;
  for (const auto& [name, g] : groups) {
    j["groups"][name] = ErrorStatsJson(ErrorsOf(g.ratios));
    if (g.misaligned.empty()) continue;
    j["groups"][name]["aligned"] = ErrorStatsJson(ErrorsOf(g.aligned));
    j["groups"][name]["misaligned"] = ErrorStatsJson(ErrorsOf(g.misaligned));
    nlohmann::json pairs = nlohmann::json::array();
    const std::vector<PairCheck> checks = AlignmentPairs(g.rows, g.predicted_s);
    for (const PairCheck& p : checks) {
      pairs.push_back({{"misaligned", GemmKeyString(p.misaligned)},
                       {"aligned", GemmKeyString(p.aligned)},
                       {"measured_ratio", p.measured_ratio},
                       {"predicted_ratio", p.predicted_ratio}});
    }
    j["groups"][name]["pairs"] = pairs;
    j["groups"][name]["pairs_within_20_percent"] = PairsWithin20(checks);
  }
  out << JsonText(j, 1) << "\n";
}

void WriteEvaluationTable(const std::map<std::string, EvaluationGroup>& groups, std::ostream& out) {
  out << absl::StrFormat("%-58s %6s %8s %8s %8s %8s\n",
                         "measurements (error = measured/predicted - 1)", "rows", "median", "p90",
                         "max", "signed");
  auto row = [&](const std::string& name, const std::vector<double>& ratios) {
    const ErrorStats e = ErrorsOf(ratios);
    out << absl::StrFormat("%-58s %6d %7.1f%% %7.1f%% %7.1f%% %+7.1f%%\n", name, e.rows,
                           100 * e.median_abs, 100 * e.p90_abs, 100 * e.max_abs,
                           100 * e.median_signed);
  };
  for (const auto& [name, g] : groups) {
    row(name, g.ratios);
    if (g.misaligned.empty()) continue;
    row("  aligned (every leading dimension a multiple of 16 bytes)", g.aligned);
    row("  misaligned", g.misaligned);
    const std::vector<PairCheck> pairs = AlignmentPairs(g.rows, g.predicted_s);
    std::vector<double> pair_ratios;
    for (const PairCheck& p : pairs) pair_ratios.push_back(p.predicted_ratio / p.measured_ratio);
    row("  aligned/misaligned pairs (error of the predicted ratio)", pair_ratios);
    out << absl::StrFormat("    %d of %d pairs within 20%% of the measured ratio\n",
                           PairsWithin20(pairs), pairs.size());
  }
}

// `wavecrest calibrate --evaluate FILE[,FILE]`: the current calibration's errors on measurements,
// by source, GPU and dtype, split by alignment where some rows are misaligned, with the
// aligned/misaligned pairs' ratios (core/calibration.h, AlignmentPairs).
int DoEvaluate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<Measurement>> rows = ReadAll(o.evaluate, nullptr);
  if (!rows.ok()) return Fail(err, rows.status());
  std::map<std::string, EvaluationGroup> groups;
  nlohmann::json json_rows = nlohmann::json::array();
  for (const Measurement& m : *rows) {
    absl::StatusOr<const GpuSpec*> gpu = FindGpu(m.gpu);
    if (!gpu.ok()) return Fail(err, gpu.status());
    if (!(*gpu)->Supports(m.key.dtype)) continue;
    // What the row's method reports, as the model predicts it (XLA's table: the median of the
    // kernels it traced; core/calibration.h PredictAsMeasured), beside the GEMM's own time.
    const double predicted = PredictAsMeasured(**gpu, m);
    EvaluationGroup& g = groups[absl::StrCat(m.source, " ", m.gpu, " ", DTypeName(m.key.dtype))];
    g.ratios.push_back(m.median_s / predicted);
    (AlignedGemm(m.key) ? g.aligned : g.misaligned).push_back(m.median_s / predicted);
    g.predicted_s.push_back(predicted);
    g.rows.push_back(m);
    json_rows.push_back({{"source", m.source},
                         {"gpu", m.gpu},
                         {"gemm", GemmKeyString(m.key)},
                         {"aligned", AlignedGemm(m.key)},
                         {"measured_s", m.median_s},
                         {"predicted_s", predicted},
                         {"predicted_gemm_s", PredictGemmTime(**gpu, m.key)},
                         {"error", m.median_s / predicted - 1}});
  }
  if (o.format == "json") {
    WriteEvaluationJson(groups, json_rows, out);
  } else {
    WriteEvaluationTable(groups, out);
  }
  return 0;
}

// The fused-attention rows of every file in `files` (a comma list), appended to `rows`.
absl::Status ReadAttentionFiles(const std::string& files, const char* flag,
                                std::vector<AttentionMeasurement>& rows) {
  for (const std::string& f : Files(files)) {
    absl::StatusOr<std::vector<AttentionMeasurement>> r = ReadAttentionFile(f);
    if (!r.ok()) return FieldError(flag, r.status().message());
    rows.insert(rows.end(), r->begin(), r->end());
  }
  return absl::OkStatus();
}

// The GEMM rows (fit, anchors, checks) and time ratios of a calibration, with their labels.
absl::Status ReadGemmInputs(const CliOptions& o, CalibrateInputs& in) {
  absl::StatusOr<std::vector<Measurement>> fit = ReadAll(o.fit, &in.dataset_labels);
  if (!fit.ok()) return fit.status();
  in.fit_rows = std::move(*fit);
  absl::StatusOr<std::vector<Measurement>> anchors = ReadAll(o.anchor, &in.dataset_labels);
  if (!anchors.ok()) return anchors.status();
  in.anchor_rows = std::move(*anchors);
  absl::StatusOr<std::vector<Measurement>> checks = ReadAll(o.check, &in.dataset_labels);
  if (!checks.ok()) return checks.status();
  in.check_rows = std::move(*checks);
  for (const std::string& f : Files(o.ratios)) {
    std::ifstream file(f);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) return absl::NotFoundError(absl::StrCat(f, ": cannot open"));
    absl::StatusOr<std::vector<TimeRatio>> r = ParseRatiosCsv(text.str(), f);
    if (!r.ok()) return r.status();
    in.dataset_labels.push_back(absl::StrCat(f, ": ", r->size(), " ratios"));
    in.ratios.insert(in.ratios.end(), r->begin(), r->end());
  }
  return absl::OkStatus();
}

// `calibrate --fit=`: the fused-attention report alone (nothing written to a calibration file).
int AttentionReportOnly(const CliOptions& o, const std::vector<AttentionMeasurement>& attention,
                        const std::vector<AttentionMeasurement>& attention_checks,
                        std::ostream& out, std::ostream& err) {
  if (attention.empty()) {
    return Fail(err, FieldError("--fit", "nothing to calibrate: give --fit or --attention_data"));
  }
  const std::string report = absl::StrCat(
      "# wavecrest calibrate --fit= --attention_data ", o.attention_data, " --attention_check ",
      o.attention_check, "\n",
      CalibrateAttention(GpuCatalog(), attention, attention_checks, FitOptions()).report);
  if (!o.report.empty()) {
    if (absl::Status st = WriteFile(o.report, report); !st.ok()) return Fail(err, st);
  }
  out << report;
  return 0;
}

// The whole fit, GEMMs and fused attention, with the progress bar showing its stage.
CalibrateOutput FitEverything(const CliOptions& o, CalibrateInputs& in) {
  for (const std::string& f : Files(o.attention_data)) {
    in.dataset_labels.push_back(absl::StrCat(f, ": fused attention"));
  }
  for (const std::string& f : Files(o.attention_check)) {
    in.dataset_labels.push_back(absl::StrCat(f, ": fused attention, held out"));
  }
  FitOptions options;
  options.folds = o.folds;
  // Offline, the fit may take a minute: more starts and evaluations than the server's
  // self-calibration, so that the cross-validation folds land in the same minimum (with 3 x 1500
  // the H100 and H200 BF16 folds scattered: 150 and 153 of 168 pairs within 20%, 156 and 156
  // with 6 x 4000).
  options.max_evaluations = 4000;
  options.starts = 6;
  ProgressBar bar(true);
  CalibrateOutput result = Calibrate(in, options, [&](const std::string& what) {
    v1::Progress p;
    p.set_message(what);
    p.set_total(1);
    bar.Update(p);
  });
  bar.Clear();
  result.file.command =
      absl::StrCat("wavecrest calibrate --fit ", o.fit, " --anchor ", o.anchor, " --check ",
                   o.check, " --ratios ", o.ratios, " --attention_data ", o.attention_data,
                   " --attention_check ", o.attention_check, " --folds ", o.folds);
  return result;
}

}  // namespace

// `wavecrest calibrate`: fit, cross-validate, report; with --out, write the calibration file.
int DoCalibrate(const CliOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.evaluate.empty()) return DoEvaluate(o, out, err);
  if (o.folds < 2 || o.folds > 50) {
    return Fail(err, FieldError("--folds", absl::StrCat("must be in [2, 50]; got ", o.folds)));
  }
  // The fused-attention model's data: fitted, and held out.
  std::vector<AttentionMeasurement> attention, attention_checks;
  if (absl::Status st = ReadAttentionFiles(o.attention_data, "--attention_data", attention);
      !st.ok()) {
    return Fail(err, st);
  }
  if (absl::Status st =
          ReadAttentionFiles(o.attention_check, "--attention_check", attention_checks);
      !st.ok()) {
    return Fail(err, st);
  }
  if (o.fit.empty()) return AttentionReportOnly(o, attention, attention_checks, out, err);
  CalibrateInputs in;
  if (absl::Status st = ReadGemmInputs(o, in); !st.ok()) return Fail(err, st);
  in.attention_rows = std::move(attention);
  in.attention_checks = std::move(attention_checks);
  const CalibrateOutput result = FitEverything(o, in);
  if (!o.out.empty()) {
    if (absl::Status st = WriteFile(o.out, SerializeCalibration(result.file)); !st.ok()) {
      return Fail(err, st);
    }
  }
  if (!o.report.empty()) {
    if (absl::Status st = WriteFile(o.report, result.report); !st.ok()) return Fail(err, st);
  }
  out << result.report;
  return 0;
}

}  // namespace cli
}  // namespace wavecrest
