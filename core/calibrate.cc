// Calibrate(): the whole `wavecrest calibrate` run, GPU-free (core/calibrate.h): the fits, what
// carries to GPUs without data, and the checks; the report's rows are core/calibration_report.h's.
#include "core/calibrate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <initializer_list>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/attention_calibration.h"
#include "core/calibration.h"
#include "core/calibration_report.h"
#include "core/cost_model.h"

namespace wavecrest {
namespace {

using calibration_report::BandsText;
using calibration_report::DetailRows;
using calibration_report::kStatsHeader;
using calibration_report::PairsRow;
using calibration_report::Pct;
using calibration_report::StatsRow;

GpuSpec* Find(std::vector<GpuSpec>& catalog, absl::string_view name) {
  for (GpuSpec& g : catalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

// The fitted GPU whose structure a GPU without data borrows: the same generation where one was
// fitted (Blackwell from B200), else the H100 fit (the best-covered GPU).
std::string StructureSource(const GpuSpec& g, const std::set<std::string>& fitted) {
  if (g.architecture == "Blackwell" && fitted.count("b200")) return "b200";
  if (fitted.count("h100-sxm")) return "h100-sxm";
  return fitted.empty() ? "" : *fitted.begin();
}

using ParamField = double CostModelParams::*;
void CopyFields(std::initializer_list<ParamField> fields, const CostModelParams& from,
                CostModelParams& to) {
  for (ParamField f : fields) to.*f = from.*f;
}

// Copies what the fit learned about the kernels' structure (not the GPU's peak fraction).
void CopyStructure(const CostModelParams& from, CostModelParams& to) {
  CopyFields({&CostModelParams::tile_reuse_exponent, &CostModelParams::k_overhead,
              &CostModelParams::epilogue_weight, &CostModelParams::launch_s,
              &CostModelParams::wave_latency_s, &CostModelParams::split_k_weight,
              &CostModelParams::stream_k_fixup_weight, &CostModelParams::fp8_transpose_weight,
              &CostModelParams::fp8_transpose_launch_s, &CostModelParams::memory_efficiency},
             from, to);
}

// GPUs before Hopper have no TMA and no warp-specialized persistent GEMM kernels: cuBLAS's
// Ampere-era kernels ("..._256x128_ldg8_f2f_stages_64x3_tn") fill a 3-stage pipeline of 64-element
// K tiles before the first multiply-add and write a wave's outputs after its mainloop. So their
// structure is not borrowed from a Hopper or Blackwell fit for these two terms: the prologue is
// two K tiles (k_overhead) and the epilogue is not hidden (epilogue_weight 1).
void PreHopperKernelStructure(const GpuSpec& g, DType d, CostModelParams& p) {
  if (g.compute_capability >= 90) return;
  p.k_overhead = 2.0 * static_cast<double>(p.k_tile_bytes / DTypeBytes(d));
  p.epilogue_weight = 1.0;
}

// The peak fraction at which `gpu` predicts the anchor's published time (bisection; the time
// falls as the fraction rises).
double AnchorPeakFraction(GpuSpec gpu, const Measurement& anchor) {
  DType d = FitClass(anchor.key.dtype);
  double lo = 0.2, hi = 2.5;
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    gpu.Model(d).peak_fraction = mid;
    GemmKey key = anchor.key;
    key.dtype = d;
    if (PredictGemmTime(gpu, key) > anchor.median_s) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return std::sqrt(lo * hi);
}

const Measurement* AnchorFor(const std::vector<Measurement>& anchors, absl::string_view gpu,
                             DType d) {
  for (const Measurement& m : anchors) {
    if (m.gpu == gpu && FitClass(m.key.dtype) == d) return &m;
  }
  return nullptr;
}

// What the alignment fit learned (cost_model.h): the factors of each kernel family.
void CopyAlignment(const CostModelParams& from, CostModelParams& to) {
  CopyFields({&CostModelParams::narrow_tn_efficiency, &CostModelParams::narrow_tn_output_efficiency,
              &CostModelParams::narrow_nn_efficiency, &CostModelParams::narrow_nt_efficiency,
              &CostModelParams::vector_efficiency, &CostModelParams::misaligned_memory_efficiency,
              &CostModelParams::vector_k_overhead, &CostModelParams::narrow_k_overhead},
             from, to);
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct Group {
  std::string source;
  std::string gpu;
  DType dtype;
  std::vector<Measurement> rows;
};

// Rows grouped by (source, gpu, dtype), in first-seen order.
std::vector<Group> GroupRows(const std::vector<Measurement>& rows, bool by_fit_class) {
  std::vector<Group> groups;
  for (const Measurement& m : rows) {
    const DType d = by_fit_class ? FitClass(m.key.dtype) : m.key.dtype;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.source == m.source && g.gpu == m.gpu && g.dtype == d;
    });
    if (it == groups.end()) {
      groups.push_back({m.source, m.gpu, d, {}});
      it = groups.end() - 1;
    }
    it->rows.push_back(m);
  }
  return groups;
}

}  // namespace

namespace {

// One calibration, in the order its report reads: fit the sources, carry the alignment cliff,
// write the fitted GPUs' entries, measure what transfer costs, give the GPUs without data their
// priors, check on what was never fitted, and fit fused attention. Each step is a method; the
// state they share is the run's.
class CalibrationRun {
 public:
  CalibrationRun(const CalibrateInputs& in, const FitOptions& options,
                 const std::function<void(const std::string&)>& progress)
      : in_(in), options_(options), progress_(progress), prior_(PriorCatalog()), catalog_(prior_) {
    file().model = std::string(kCostModelName);
    file().created = UtcNow();
    file().datasets = in.dataset_labels;
  }

  CalibrateOutput Run() {
    FitSources();
    ChooseCliff();
    AddFittedEntries();
    ReportTransfer();
    MeasureAnchorBias();
    AddUnfittedGpus();
    ReportChecks();
    ReportRatios();
    FitAttention();
    out_.report = absl::StrCat(
        "# wavecrest calibrate, ", file().created, ": model ", kCostModelName, "\n",
        "# error = measured time / predicted time - 1; median, p90 and max of |error|; signed* = "
        "median of error (> 0: the model is too fast)\n",
        "# datasets:\n",
        absl::StrJoin(file().datasets, "\n",
                      [](std::string* o, const std::string& d) { absl::StrAppend(o, "#   ", d); }),
        "\n\n", fits_text_, "\n", transfer_text_, "\n", checks_text_, attention_text_);
    return std::move(out_);
  }

 private:
  using FitKey = std::pair<std::string, DType>;

  CalibrationFile& file() { return out_.file; }

  const GpuSpec* Prior(const std::string& gpu) const {
    for (const GpuSpec& x : prior_) {
      if (x.name == gpu) return &x;
    }
    return nullptr;
  }

  // 1. Fit every (GPU, dtype class) the fitting data cover, each to the first source given that
  // covers it; a later source's rows of the same pair are held-out checks (XLA's H100 BF16 table,
  // once the device sweep covers H100 BF16).
  void FitSources() {
    for (const Group& g : GroupRows(in_.fit_rows, /*by_fit_class=*/true)) {
      const GpuSpec* p = Prior(g.gpu);
      if (p == nullptr || !p->Supports(g.dtype)) continue;
      auto key = std::make_pair(g.gpu, g.dtype);
      if (fits_.count(key)) {
        superseded_.insert(superseded_.end(), g.rows.begin(), g.rows.end());
        continue;
      }
      progress_(absl::StrCat("fitting ", g.gpu, " ", DTypeName(g.dtype), " (", g.rows.size(),
                             " rows, ", options_.folds, "-fold cross-validation)"));
      FitResult r = FitAndValidate(*p, g.dtype, g.rows, options_);
      fits_.emplace(key, r);
      fitted_source_[key] = g.source;
      fitted_gpus_.insert(g.gpu);
      for (DType d : DTypesServedBy(g.dtype)) Find(catalog_, g.gpu)->Model(d) = r.params;
    }
  }

  // 2. The alignment cliff where a fit did not see it: GPUs with TMA (Hopper, Blackwell) take the
  // constants of the fit that saw the most misaligned GEMMs; GPUs before Hopper keep the prior.
  void ChooseCliff() {
    for (const auto& [key, r] : fits_) {
      if (Find(catalog_, key.first)->compute_capability < 90) continue;
      if (cliff_ == nullptr || r.misaligned_rows > cliff_->misaligned_rows) cliff_ = &r;
    }
    if (cliff_ != nullptr && cliff_->misaligned_rows < kMinRowsToFitAClass) cliff_ = nullptr;
  }

  std::string AlignmentFor(const GpuSpec& g, int64_t own_misaligned_rows, CostModelParams& params,
                           CalibrationInfo& info) const {
    if (own_misaligned_rows >= kMinRowsToFitAClass) {
      return absl::StrFormat("alignment cliff fitted to its own %d misaligned GEMMs",
                             own_misaligned_rows);
    }
    if (g.compute_capability >= 90 && cliff_ != nullptr) {
      CopyAlignment(cliff_->params, params);
      info.misaligned_band = cliff_->misaligned_band;
      return absl::StrFormat(
          "alignment cliff carried from the %s %s fit (%d misaligned GEMMs; %s "
          "has TMA too)",
          cliff_->gpu, DTypeName(cliff_->dtype), cliff_->misaligned_rows, g.architecture);
    }
    return absl::StrFormat("alignment penalty a PRIOR (%.3f: no misaligned GEMM measured on %s)",
                           params.vector_efficiency, g.architecture);
  }

  // An entry of the calibration file, applied to the run's catalog too.
  void AddEntry(const std::string& gpu, DType fitted, const CostModelParams& params,
                CalibrationInfo info, int64_t misaligned_rows) {
    GpuSpec* g = Find(catalog_, gpu);
    CalibrationEntry e;
    e.gpu = gpu;
    e.dtypes = DTypesServedBy(fitted);
    e.params = params;
    const std::string why = AlignmentFor(*g, misaligned_rows, e.params, info);
    info.label = absl::StrCat(info.label, "; ", why);
    e.info = std::move(info);
    for (DType d : e.dtypes) {
      g->Model(d) = e.params;
      g->Calibration(d) = e.info;
    }
    file().entries.push_back(std::move(e));
  }

  // 3. Entries for the fitted GPUs, and for GPUs that share their silicon (H200 from H100).
  void AddFittedEntries() {
    absl::StrAppend(&fits_text_, "Fits (", options_.folds,
                    "-fold cross-validation: every row predicted by a fit that never saw it)\n",
                    kStatsHeader);
    for (const auto& [key, r] : fits_) {
      const std::string& gpu = key.first;
      const DType dtype = key.second;
      CalibrationInfo info;
      info.calibrated = true;
      info.bands = r.bands;
      info.misaligned_band = r.misaligned_band;
      info.label = absl::StrFormat("fitted to %s (%s %s, %d rows), %d-fold CV median error %s",
                                   fitted_source_.at(key), gpu, DTypeName(dtype), r.rows,
                                   options_.folds, Pct(r.cv.median_abs));
      if (r.above_peak_rows > 0) {
        absl::StrAppend(
            &info.label,
            absl::StrFormat("; WARNING: %d more rows of this source ran faster than the "
                            "datasheet peak, which no GPU can, and were left out: treat "
                            "its other figures with suspicion (bench/results/calibration.txt)",
                            r.above_peak_rows));
      }
      AddEntry(gpu, dtype, r.params, info, r.misaligned_rows);
      if (gpu == "h100-sxm" && Find(catalog_, "h200") != nullptr && !fits_.count({"h200", dtype})) {
        CalibrationInfo h200 = info;
        h200.label = absl::StrCat(info.label,
                                  "; H200 has H100's SMs, clocks and tensor rate, with its own "
                                  "memory bandwidth");
        AddEntry("h200", dtype, r.params, h200, r.misaligned_rows);
      }
      ReportFit(gpu, dtype, r);
    }
  }

  // The pairs measured again on a fitted GPU of the same silicon (SMs, compute capability, tensor
  // rate): how many of that GPU's measured ratios are within 20% of this one's, the floor a
  // second measurement of the same kernels reaches (empty when there is no such GPU).
  std::string SiblingPairsRow(const std::string& gpu, DType dtype, const FitResult& r) {
    const GpuSpec* g = Find(catalog_, gpu);
    std::string out;
    for (const auto& [key, other] : fits_) {
      const GpuSpec* o = Find(catalog_, key.first);
      if (key.first == gpu || key.second != dtype || g == nullptr || o == nullptr ||
          o->sm_count != g->sm_count || o->compute_capability != g->compute_capability ||
          o->PeakFlops(dtype) != g->PeakFlops(dtype)) {
        continue;
      }
      const PairReproduction rep = ReproducePairs(r.cv_pairs, other.cv_pairs);
      if (rep.matched == 0) continue;
      absl::StrAppend(
          &out, absl::StrFormat("      the same pairs measured on %s (its SMs, clocks and library) "
                                "as the prediction: %d of %d within 20%% of this GPU's measured "
                                "ratio (the floor two measurements reach)\n",
                                key.first, rep.within, rep.matched));
    }
    return out;
  }

  void ReportFit(const std::string& gpu, DType dtype, const FitResult& r) {
    const std::string what = absl::StrCat(gpu, " ", DTypeName(dtype));
    absl::StrAppend(&fits_text_, StatsRow(absl::StrCat(what, "  before (priors)"), r.before),
                    StatsRow(absl::StrCat(what, "  fitted, on its own rows"), r.train),
                    StatsRow(absl::StrCat(what, "  cross-validated"), r.cv));
    if (r.misaligned_rows > 0) {
      absl::StrAppend(&fits_text_,
                      StatsRow(absl::StrCat(what, "    aligned (16 bytes)"), r.cv_aligned),
                      StatsRow(absl::StrCat(what, "    misaligned"), r.cv_misaligned),
                      PairsRow(absl::StrCat(what, "    aligned/misaligned pairs"), r.cv_pairs),
                      SiblingPairsRow(gpu, dtype, r));
    }
    absl::StrAppend(&fits_text_, "    error band by predicted time: ", BandsText(r.bands), "\n");
    if (r.above_peak_rows > 0) {
      absl::StrAppend(
          &fits_text_,
          absl::StrFormat("    NOTE: %d rows ran faster than the datasheet dense peak of %.0f "
                          "TFLOP/s: mis-timed (see data/measurements/README.md), left out of the "
                          "fit\n",
                          r.above_peak_rows, Find(catalog_, gpu)->PeakFlops(dtype) / 1e12));
    }
    std::string params = "    parameters:";
    for (const FittedParam& f : r.fitted) {
      absl::StrAppend(&params, absl::StrFormat(" %s=%.4g", f.name, r.params.*(f.field)));
    }
    absl::StrAppend(&fits_text_, params, "\n");
  }

  // 4. How wrong a GPU without data is: predict each fitted GPU with another's structure and
  // (where published) its own anchored peak fraction.
  void ReportTransfer() {
    absl::StrAppend(&transfer_text_,
                    "Transfer: each fitted GPU predicted with another fitted GPU's structure (what "
                    "a GPU without data gets)\n",
                    kStatsHeader);
    for (const auto& [to_key, to_fit] : fits_) {
      for (const auto& [from_key, from_fit] : fits_) {
        if (from_key.first == to_key.first || from_key.second != to_key.second) continue;
        Transfer(to_key, from_key.first, from_fit);
      }
    }
  }

  void Transfer(const FitKey& to_key, const std::string& from_gpu, const FitResult& from_fit) {
    const DType d = to_key.second;
    GpuSpec g = *Find(catalog_, to_key.first);
    std::vector<Measurement> rows;
    for (const Measurement& m : in_.fit_rows) {
      if (m.gpu == to_key.first && FitClass(m.key.dtype) == d &&
          m.source == fitted_source_.at(to_key)) {
        rows.push_back(m);
      }
    }
    for (Measurement& m : rows) m.key.dtype = d;
    CopyStructure(from_fit.params, g.Model(d));
    g.Model(d).peak_fraction = from_fit.params.peak_fraction;
    const std::vector<double> un = Ratios(g, rows);
    transfer_unanchored_[d].insert(transfer_unanchored_[d].end(), un.begin(), un.end());
    const std::string what = absl::StrCat(to_key.first, " ", DTypeName(d), " from ", from_gpu);
    absl::StrAppend(&transfer_text_,
                    StatsRow(absl::StrCat(what, ", its peak fraction"), ErrorsOf(un)));
    if (const Measurement* a = AnchorFor(in_.anchor_rows, to_key.first, d)) {
      g.Model(d).peak_fraction = AnchorPeakFraction(g, *a);
      const std::vector<double> an = Ratios(g, rows);
      transfer_anchored_[d].insert(transfer_anchored_[d].end(), an.begin(), an.end());
      absl::StrAppend(&transfer_text_,
                      StatsRow(absl::StrCat(what, ", peak anchored to ", a->source), ErrorsOf(an)));
    }
  }

  // How much faster than the fit an anchor figure is, on the fitted GPUs that have one: a
  // "best shape of a sweep" figure is the luckiest of many (winner's curse), so an unfitted GPU's
  // peak is anchored to its figure slowed by this much (mean log ratio per dtype).
  void MeasureAnchorBias() {
    std::map<DType, std::vector<double>> logs;
    for (const Measurement& a : in_.anchor_rows) {
      const DType d = FitClass(a.key.dtype);
      if (!fits_.count({a.gpu, d})) continue;
      const GpuSpec* g = Find(catalog_, a.gpu);
      GemmKey key = a.key;
      key.dtype = d;
      logs[d].push_back(std::log(PredictGemmTime(*g, key) / a.median_s));
    }
    for (auto& [d, v] : logs) {
      double sum = 0;
      for (double x : v) sum += x;
      anchor_bias_[d] = sum / static_cast<double>(v.size());
      absl::StrAppend(
          &transfer_text_,
          absl::StrFormat("  %s anchor figures are %+.1f%% faster than the fits predict them "
                          "(mean of %d fitted GPUs; negative: slower): unfitted GPUs' anchors "
                          "are corrected by that much\n",
                          DTypeName(d), 100 * (std::exp(anchor_bias_[d]) - 1), v.size()));
    }
  }

  // 5. GPUs without data: the fitted structure, a peak fraction anchored to a published figure
  // where there is one, and the transfer error as their band.
  void AddUnfittedGpus() {
    for (GpuSpec& g : catalog_) {
      // (A variant that takes another GPU's calibration, GpuSpec::calibrated_as, gets it from
      // that GPU's entries.)
      if (fitted_gpus_.count(g.name) || g.name == "h200" || !g.calibrated_as.empty()) continue;
      const std::string src = StructureSource(g, fitted_gpus_);
      if (src.empty()) break;
      for (DType d : {DType::kBf16, DType::kTf32, DType::kFp8E4M3}) {
        if (g.Supports(d) && fits_.count({src, d})) AddUnfitted(g, d, src);
      }
    }
  }

  void AddUnfitted(const GpuSpec& g, DType d, const std::string& src) {
    CostModelParams params = g.Model(d);
    CopyStructure(fits_.at({src, d}).params, params);
    PreHopperKernelStructure(g, d, params);
    CalibrationInfo info;
    info.calibrated = false;
    std::string peak_why;
    std::vector<double> transfer = transfer_unanchored_[d];
    GpuSpec probe = g;
    probe.Model(d) = params;
    if (const Measurement* a = AnchorFor(in_.anchor_rows, g.name, d)) {
      Measurement target = *a;
      target.median_s *= std::exp(anchor_bias_[d]);
      params.peak_fraction = AnchorPeakFraction(probe, target);
      peak_why = absl::StrFormat(
          "peak fraction %.3f set to reproduce %s (%s, %.1f TFLOP/s) less the %.1f%% that "
          "anchors beat the fits by",
          params.peak_fraction, a->source, GemmKeyString(a->key),
          GemmFlops(a->key.shape) / a->median_s / 1e12, 100 * (std::exp(anchor_bias_[d]) - 1));
      transfer = transfer_anchored_[d];
    } else {
      peak_why =
          absl::StrFormat("peak fraction %.2f a prior (no published figure)", params.peak_fraction);
    }
    std::vector<double> pred(transfer.size(), 1.0);  // one band for all sizes
    info.bands = ErrorBands(pred, transfer, FitOptions{.band_edges_s = {}});
    info.label = absl::StrFormat(
        "uncalibrated prior: no %s measurements of this GPU; kernel structure from the %s %s "
        "fit%s, %s; error band from predicting one fitted GPU with another's structure",
        DTypeName(d), src, DTypeName(d),
        g.compute_capability < 90 ? " (prologue and epilogue as pre-Hopper kernels run them)" : "",
        peak_why);
    AddEntry(g.name, d, params, info, 0);
  }

  // 6. Checks the fit never saw: published sets kept for checking, and anchors of fitted GPUs.
  void ReportChecks() {
    std::vector<Measurement> checks = in_.check_rows;
    checks.insert(checks.end(), superseded_.begin(), superseded_.end());
    for (const Measurement& a : in_.anchor_rows) {
      if (fitted_gpus_.count(a.gpu) || (a.gpu == "h200" && fitted_gpus_.count("h100-sxm"))) {
        checks.push_back(a);
      }
    }
    absl::StrAppend(&checks_text_,
                    "Checks on published measurements never fitted (before = built-in priors, "
                    "after = this calibration)\n",
                    kStatsHeader);
    for (const Group& g : GroupRows(checks, /*by_fit_class=*/false)) {
      const GpuSpec* before = Prior(g.gpu);
      const GpuSpec* after = Find(catalog_, g.gpu);
      if (before == nullptr || after == nullptr || !after->Supports(g.dtype)) continue;
      const std::string what = absl::StrCat(g.source, " ", g.gpu, " ", DTypeName(g.dtype));
      absl::StrAppend(&checks_text_,
                      StatsRow(absl::StrCat(what, " before"), ErrorsOf(Ratios(*before, g.rows))),
                      StatsRow(absl::StrCat(what, " after"), ErrorsOf(Ratios(*after, g.rows))));
      if (g.rows.size() <= 24) absl::StrAppend(&checks_text_, DetailRows(*before, *after, g.rows));
    }
  }

  // Published time ratios (no absolute times), before and after.
  void ReportRatios() {
    if (in_.ratios.empty()) return;
    absl::StrAppend(
        &checks_text_, "  Published time ratios (time / time of the reference shape)\n",
        absl::StrFormat("    %-40s %10s %10s %10s\n", "GEMM", "published", "before", "after"));
    for (const TimeRatio& r : in_.ratios) {
      const GpuSpec* after = Find(catalog_, r.row.gpu);
      const GpuSpec* before = Prior(r.row.gpu);
      if (after == nullptr || before == nullptr) continue;
      GemmKey ref = r.row.key;
      ref.shape = r.reference;
      auto ratio = [&](const GpuSpec& g) {
        return PredictGemmTime(g, r.row.key) / PredictGemmTime(g, ref);
      };
      absl::StrAppend(&checks_text_,
                      absl::StrFormat("    %-40s %10.3f %10.3f %10.3f\n", GemmKeyString(r.row.key),
                                      r.row.median_s, ratio(*before), ratio(*after)));
    }
  }

  // 7. Fused attention, where attention data exist: each fit's constants and band go into the
  // entries of the GPUs it applies to (its own, and H200's from H100); a GPU on priors with
  // held-out checks of its own gets the band they give.
  void FitAttention() {
    if (in_.attention_rows.empty()) return;
    progress_("fitting fused attention");
    const AttentionCalibration attention =
        CalibrateAttention(catalog_, in_.attention_rows, in_.attention_checks, options_);
    auto covers = [](const CalibrationEntry& e, DType dtype) {
      return std::find(e.dtypes.begin(), e.dtypes.end(), dtype) != e.dtypes.end();
    };
    for (const AttentionCalibration::Group& g : attention.groups) {
      for (CalibrationEntry& e : file().entries) {
        if (!AttentionFitApplies(g.fit.gpu, e.gpu) || !covers(e, g.fit.dtype)) continue;
        for (const FittedParam& f : AttentionFittedParams()) {
          e.params.*(f.field) = g.fit.params.*(f.field);
        }
        e.params.flash_band_p10 = g.band_p10;
        e.params.flash_band_p90 = g.band_p90;
      }
    }
    // GPUs on the H100 constants as priors, with held-out checks of their own: their band.
    for (const AttentionCalibration::PriorBand& b : attention.prior_bands) {
      for (CalibrationEntry& e : file().entries) {
        if (e.gpu != b.gpu || !covers(e, b.dtype)) continue;
        e.params.flash_band_p10 = b.band_p10;
        e.params.flash_band_p90 = b.band_p90;
      }
    }
    attention_text_ = "\n" + attention.report;
  }

  const CalibrateInputs& in_;
  const FitOptions& options_;
  const std::function<void(const std::string&)>& progress_;
  const std::vector<GpuSpec> prior_;
  std::vector<GpuSpec> catalog_;
  CalibrateOutput out_;
  std::map<FitKey, FitResult> fits_;
  std::map<FitKey, std::string> fitted_source_;
  std::set<std::string> fitted_gpus_;
  std::vector<Measurement> superseded_;
  const FitResult* cliff_ = nullptr;  // the fit whose alignment constants carry (ChooseCliff)
  std::map<DType, std::vector<double>> transfer_anchored_, transfer_unanchored_;
  std::map<DType, double> anchor_bias_;
  std::string fits_text_, transfer_text_, checks_text_, attention_text_;
};

}  // namespace

CalibrateOutput Calibrate(const CalibrateInputs& in, const FitOptions& options,
                          const std::function<void(const std::string&)>& progress) {
  return CalibrationRun(in, options, progress).Run();
}

}  // namespace wavecrest
